package main

import (
	"testing"
)

func TestParseSpecTakesTheOrchestratorsCommandLine(t *testing.T) {
	s, err := parseSpec([]string{
		"child", "--scenario", "updates", "--impl", "client-go-json", "--url", "http://127.0.0.1:1",
		"--pods", "40", "--namespaces", "4", "--label-selector", "shard in (0,1)", "--objects", "8",
		"--update-rounds", "2", "--final-generation", "4", "--sentinel", "s", "--query-ms", "200",
		"--page-size", "500",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.scenario != "updates" || s.impl != implJSON || s.objects != 8 || s.finalGeneration != 4 ||
		s.labelSelector != "shard in (0,1)" || s.pageSize != 500 {
		t.Fatalf("unexpected spec %+v", s)
	}
	if _, err := parseSpec([]string{"--scenario", "sync", "--impl", "ours", "--url", "u"}); err == nil {
		t.Fatal("an implementation this program does not run must be refused")
	}
	// The name of the column before client-go's default became the headline: refused, so that an
	// old orchestrator cannot silently run the default under the old name.
	if _, err := parseSpec([]string{"--scenario", "sync", "--impl", "client-go-proto", "--url", "u"}); err == nil {
		t.Fatal("client-go-proto is no longer an implementation")
	}
	if s, err := parseSpec([]string{"--scenario", "sync", "--url", "u"}); err != nil || s.impl != implDefault {
		t.Fatalf("without --impl the child runs client-go's default, got %+v, %v", s, err)
	}
}

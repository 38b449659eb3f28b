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

func TestParseSpecTakesEveryClustersServer(t *testing.T) {
	s, err := parseSpec([]string{
		"child", "--scenario", "clusters", "--impl", "client-go", "--url", "http://127.0.0.1:1",
		"--cluster-urls", "http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3",
		"--pods", "600", "--objects", "600", "--namespaces", "2", "--page-size", "500",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	if len(s.clusterURLs) != len(want) || s.objects != 600 {
		t.Fatalf("unexpected spec %+v", s)
	}
	for i, u := range want {
		if s.clusterURLs[i] != u {
			t.Fatalf("cluster %d: got %q, want %q", i, s.clusterURLs[i], u)
		}
	}
	if _, err := parseSpec([]string{"--scenario", "clusters", "--url", "u"}); err == nil {
		t.Fatal("scenario clusters without --cluster-urls must be refused")
	}
}

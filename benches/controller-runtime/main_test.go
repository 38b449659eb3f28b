package main

import "testing"

func TestParseSpecTakesTheOrchestratorsCommandLine(t *testing.T) {
	s, err := parseSpec([]string{
		"child", "--scenario", "operator", "--impl", "controller-runtime", "--url", "http://127.0.0.1:1",
		"--pods", "1000", "--namespaces", "10", "--objects", "100", "--kubeconfig", "/tmp/k",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.deployments != 100 || s.pods != 1000 || s.namespaces != 10 || s.kubeconfig != "/tmp/k" {
		t.Fatalf("unexpected spec %+v", s)
	}
	for _, bad := range [][]string{
		{"--scenario", "sync", "--url", "u"},
		{"--scenario", "operator", "--impl", "client-go", "--url", "u"},
		{"--scenario", "operator"},
		{"--scenario", "operator", "--url", "u", "extra"},
	} {
		if _, err := parseSpec(bad); err == nil {
			t.Fatalf("%q must be refused", bad)
		}
	}
}

func TestTheWrittenConfigMapIsNamedAfterTheDeployment(t *testing.T) {
	// config_map_name in benches/src/fleet.rs; the orchestrator checks the ConfigMaps by it.
	if got := configMapName("app-00004"); got != "app-00004-summary" {
		t.Fatalf("got %q", got)
	}
}

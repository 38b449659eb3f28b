package childio

import (
	"encoding/json"
	"testing"
)

func TestParseStatusReadsRSSAndHWM(t *testing.T) {
	current, peak := ParseStatus("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")
	if current != 1024 || peak != 2048 {
		t.Fatalf("got %d, %d", current, peak)
	}
	if current, peak := ParseStatus(""); current != 0 || peak != 0 {
		t.Fatalf("got %d, %d", current, peak)
	}
}

func TestCPUSecondsAreUserPlusSystemAfterTheCommandName(t *testing.T) {
	got, err := ParseStatCPU("4242 (a (b) c) S 1 4242 4242 0 -1 4194304 500 0 0 0 250 75 0 0 20 0 9 0 1000")
	if err != nil || got != 3.25 {
		t.Fatalf("got %v, %v; want 3.25", got, err)
	}
	if _, err := ParseStatCPU("4242 (x) S 1"); err == nil {
		t.Fatal("a short line must be refused")
	}
	if s, err := CPUSeconds(); err != nil || s < 0 {
		t.Fatalf("this process's CPU seconds: %v, %v", s, err)
	}
}

func TestMessagesMatchChildMsg(t *testing.T) {
	line, err := json.Marshal(Message{Msg: "done", Metrics: Metrics{"sync_s": 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(line), `{"msg":"done","metrics":{"sync_s":1.5}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	line, err = json.Marshal(Message{Msg: "synced"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(line), `{"msg":"synced","metrics":{}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	line, err = json.Marshal(Message{Msg: "failed", Error: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(line), `{"msg":"failed","error":"boom"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

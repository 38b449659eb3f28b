package main

import "github.com/informer-rs/informer-rs/benches/childio"

// The protocol and the self-measurement every Go child shares (benches/childio), under the
// names this child's files use.
type (
	metrics = childio.Metrics
	message = childio.Message
	childIO = childio.IO
)

const (
	mib          = childio.MiB
	phaseTimeout = childio.PhaseTimeout
	cmdProceed   = childio.CmdProceed
)

var (
	startIO          = childio.Start
	startHeapSampler = childio.StartHeapSampler
	resetPeaks       = childio.ResetPeaks
	memoryMetrics    = childio.MemoryMetrics
)

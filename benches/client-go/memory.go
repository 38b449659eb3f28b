package main

import (
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// mib is bytes in a MiB (MIB in protocol.rs).
const mib = 1024.0 * 1024.0

// samplePeriod is how often the heap sampler reads the heap. Go has no allocation hook like the
// Rust children's counting allocator, so the peak is the largest sample: a spike shorter than
// this can be missed, which makes the Go peak a slight underestimate, never an overestimate.
const samplePeriod = 10 * time.Millisecond

// heapObjects is runtime/metrics' name for HeapAlloc: bytes in heap objects, live or awaiting
// the sweeper. Reading it does not stop the world (runtime.ReadMemStats does).
const heapObjects = "/memory/classes/heap/objects:bytes"

var heapPeak atomic.Uint64

// heapNow reads HeapAlloc.
func heapNow() uint64 {
	sample := []rtmetrics.Sample{{Name: heapObjects}}
	rtmetrics.Read(sample)
	if sample[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// observeHeap raises the peak to the current heap and returns the current heap.
func observeHeap() uint64 {
	now := heapNow()
	for {
		peak := heapPeak.Load()
		if now <= peak || heapPeak.CompareAndSwap(peak, now) {
			return now
		}
	}
}

// startHeapSampler samples the heap every samplePeriod for the life of the process.
func startHeapSampler() {
	observeHeap()
	go func() {
		tick := time.NewTicker(samplePeriod)
		defer tick.Stop()
		for range tick.C {
			observeHeap()
		}
	}()
}

// resetPeaks restarts both peaks from the live state: the heap peak from the heap after a
// collection (as the Rust children restart theirs from the live bytes), VmHWM from VmRSS.
func resetPeaks() {
	runtime.GC()
	heapPeak.Store(heapNow())
	resetPeakRSS()
}

// memoryMetrics reports heap and RSS now and at their peaks, in MiB, plus the allocation count.
// heap_mib is the live heap: HeapAlloc right after runtime.GC(). heap_peak_mib is the largest
// HeapAlloc sampled since start or the last resetPeaks, garbage awaiting collection included
// (what the process really had to hold, which GOGC=100 lets grow to about twice the live heap).
func memoryMetrics() metrics {
	observeHeap()
	peak := heapPeak.Load()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	current, hwm := rss()
	return metrics{
		"heap_mib":      float64(ms.HeapAlloc) / mib,
		"heap_peak_mib": float64(max(peak, ms.HeapAlloc)) / mib,
		"rss_mib":       float64(current) / 1024,
		"rss_peak_mib":  float64(hwm) / 1024,
		"allocations":   float64(ms.Mallocs),
	}
}

// rss reads VmRSS and VmHWM (KiB) from /proc/self/status; zeros where /proc is unavailable.
func rss() (currentKiB, peakKiB uint64) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	return parseStatus(string(status))
}

// parseStatus finds VmRSS and VmHWM in the text of /proc/self/status.
func parseStatus(status string) (currentKiB, peakKiB uint64) {
	field := func(name string) uint64 {
		for _, line := range strings.Split(status, "\n") {
			rest, ok := strings.CutPrefix(line, name)
			if !ok {
				continue
			}
			v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return v
		}
		return 0
	}
	return field("VmRSS:"), field("VmHWM:")
}

// resetPeakRSS resets VmHWM to the current RSS by writing 5 to /proc/self/clear_refs, as
// reset_peak_rss in benches/src/sys.rs does. Where the kernel refuses, VmHWM keeps its value.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

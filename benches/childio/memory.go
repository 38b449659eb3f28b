package childio

import (
	"fmt"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// MiB is bytes in a MiB (MIB in protocol.rs).
const MiB = 1024.0 * 1024.0

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

// StartHeapSampler samples the heap every samplePeriod for the life of the process.
func StartHeapSampler() {
	observeHeap()
	go func() {
		tick := time.NewTicker(samplePeriod)
		defer tick.Stop()
		for range tick.C {
			observeHeap()
		}
	}()
}

// ResetPeaks restarts both peaks from the live state: the heap peak from the heap after a
// collection (as the Rust children restart theirs from the live bytes), VmHWM from VmRSS.
func ResetPeaks() {
	runtime.GC()
	heapPeak.Store(heapNow())
	resetPeakRSS()
}

// MemoryMetrics reports heap and RSS now and at their peaks, in MiB, plus the allocation count.
// heap_mib is the live heap: HeapAlloc right after runtime.GC(). heap_peak_mib is the largest
// HeapAlloc sampled since start or the last resetPeaks, garbage awaiting collection included
// (what the process really had to hold, which GOGC=100 lets grow to about twice the live heap).
func MemoryMetrics() Metrics {
	observeHeap()
	peak := heapPeak.Load()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	current, hwm := rss()
	return Metrics{
		"heap_mib":      float64(ms.HeapAlloc) / MiB,
		"heap_peak_mib": float64(max(peak, ms.HeapAlloc)) / MiB,
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
	return ParseStatus(string(status))
}

// ParseStatus finds VmRSS and VmHWM in the text of /proc/self/status.
func ParseStatus(status string) (currentKiB, peakKiB uint64) {
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

// userHZ is the clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux whatever the
// kernel's own tick), as in benches/src/sys.rs.
const userHZ = 100.0

// CPUSeconds is the CPU time this process has used so far, user plus system, every thread
// (utime and stime of /proc/self/stat, as cpu_seconds in benches/src/sys.rs reads them).
func CPUSeconds() (float64, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(string(stat))
}

// ParseStatCPU is utime + stime of a /proc/PID/stat line, in seconds.
func ParseStatCPU(stat string) (float64, error) {
	// The command name (field 2) may hold spaces and parentheses: count from the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	// After the name, state (field 3) is fields[0]: utime (14) is [11], stime (15) [12].
	if len(fields) < 13 {
		return 0, fmt.Errorf("too few fields in %q", stat)
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return float64(utime+stime) / userHZ, nil
}

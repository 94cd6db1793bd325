package check

import (
	"encoding/binary"
	"fmt"

	"latencytest/rundata"
)

const dmaLatencyPath = "/dev/cpu_dma_latency"

// parseDMALatency decodes the current PM QoS CPU latency request that
// reading /dev/cpu_dma_latency returns: a native 32-bit integer in µs
// (little-endian on the machines latencytest runs on).
func parseDMALatency(b []byte) (int32, bool) {
	if len(b) != 4 {
		return 0, false
	}
	return int32(binary.LittleEndian.Uint32(b)), true
}

func checkDMALatency(e *env) []rundata.Finding {
	const name = "/dev/cpu_dma_latency"
	const why = "writing 0 there and holding it open keeps CPUs out of deep idle states, whose exit can take hundreds of µs"
	const fix = `run latencytest as root, or a udev rule: KERNEL=="cpu_dma_latency", GROUP="audio", MODE="0660"`
	b, err := e.read(dmaLatencyPath)
	exists := err == nil
	if !exists {
		if _, serr := statFS(e, dmaLatencyPath); serr != nil {
			return []rundata.Finding{finding(name, INFO, "not present (kernel without PM QoS)", why, "")}
		}
	}
	cur := ""
	if v, ok := parseDMALatency([]byte(b)); ok {
		if v >= 2_000_000_000 {
			cur = "; no request held now"
		} else {
			cur = fmt.Sprintf("; %d µs requested now", v)
		}
	}
	if !e.writable(dmaLatencyPath) {
		return []rundata.Finding{finding(name, WARN, "not writable by this user"+cur, why, fix)}
	}
	return []rundata.Finding{finding(name, OK, "writable: latencytest holds it at 0 during runs"+cur, why, "")}
}

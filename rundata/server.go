package rundata

import (
	"fmt"
	"strings"
)

// Servers a phase may have measured through.
const (
	ServerPipeWire = "pipewire"
	ServerJackd    = "jackd"
)

// JackdWhich is what a jackd phase says of which client made a cycle late:
// jackd keeps no record of it.
const JackdWhich = "not known (jackd gives no account)"

// MaxServerLate bounds Server.Late: the first cycles are kept with their
// times, ByNode counts them all. MaxPhases phases with that many must stay
// within the values a reader decodes (runShape; TestMaxServerRead).
const MaxServerLate = 32

// Server is the sound server's own account of a phase's late cycles, beside
// the kernel's figures, when the phase ran through a server (--driver jack
// under PipeWire's libjack or jackd). Under PipeWire it is PipeWire's
// profiler (pw-profiler) recorded during the phase, each late cycle charged
// to the node that made it late (internal/pwprofile, docs/pipewire.md);
// under jackd only the xruns the client saw, since jackd says nothing of
// which client held the cycle.
type Server struct {
	Server string `json:"server"` // ServerPipeWire, ServerJackd
	// DetectedBy says how the server was told (the libjack this process
	// loaded, the server's socket).
	DetectedBy string `json:"detected_by"`
	// Rate is the stream's rate, the server's (a JACK client runs at it);
	// QuantumUS the cycle's duration the profile gives, QuantumFrames the
	// two together. Zero where not known.
	Rate          int     `json:"rate,omitempty"`
	QuantumFrames int     `json:"quantum_frames,omitempty"`
	QuantumUS     float64 `json:"quantum_us,omitempty"`
	// Cycles is the driver's cycles in the profile (0 under jackd).
	Cycles int `json:"cycles,omitempty"`
	// LateCycles counts the late cycles: under PipeWire those the profile
	// charges, under jackd the xruns the client saw (Phase.Xruns).
	LateCycles int `json:"late_cycles"`
	// ByNode groups LateCycles by node and reason, most first (PipeWire).
	ByNode []ServerNode `json:"by_node,omitempty"`
	// Late is each late cycle with its times, the first MaxServerLate.
	Late []ServerLate `json:"late,omitempty"`
	// Which says which client made the cycles late where the server does
	// not say (JackdWhich).
	Which string `json:"which_client,omitempty"`
	// Note says why there is no account (the profiler did not start).
	Note string `json:"note,omitempty"`
}

// ServerNode is the late cycles charged to one node for one reason.
type ServerNode struct {
	Node   string `json:"node"` // its name ("node N" without one)
	ID     int    `json:"id"`
	Driver bool   `json:"driver,omitempty"` // the graph's driver itself
	Why    string `json:"why"`
	N      int    `json:"n"`
	// MaxOverrunUS is the most it finished after its deadline; -1 not known.
	MaxOverrunUS float64 `json:"max_overrun_us"`
}

// ServerLate is one late cycle: the node charged, why, and its times after
// the cycle's start (-1 where it had not got that far, or not known).
type ServerLate struct {
	Line      int      `json:"line"` // in pw-profiler's log
	Node      string   `json:"node"`
	ID        int      `json:"id"`
	Driver    bool     `json:"driver,omitempty"`
	Why       string   `json:"why"`
	SignalUS  float64  `json:"signal_us"`
	AwakeUS   float64  `json:"awake_us"`
	FinishUS  float64  `json:"finish_us"`
	OverrunUS float64  `json:"overrun_us"`
	Others    []string `json:"others,omitempty"` // other nodes unfinished at the deadline
}

// String is the server's account in one line, as the closing block and
// the report say it: "12 late cycles: 11 'slow-client' (ran past its
// deadline, finished up to 3.1 ms after it), 1 'latencytest' (woke late,
// finished up to 0.4 ms after it)".
func (s *Server) String() string {
	if s == nil {
		return ""
	}
	if s.Note != "" {
		return fmt.Sprintf("%s: no account: %s", s.Server, s.Note)
	}
	cycles := "cycles"
	if s.LateCycles == 1 {
		cycles = "cycle"
	}
	if s.Server == ServerJackd {
		return fmt.Sprintf("jackd: %d late %s (xruns the client saw); which client: %s", s.LateCycles, cycles, s.Which)
	}
	head := fmt.Sprintf("%s: %d late %s of %d", s.Server, s.LateCycles, cycles, s.Cycles)
	if s.LateCycles == 0 {
		return head
	}
	parts := make([]string, len(s.ByNode))
	for i, n := range s.ByNode {
		parts[i] = fmt.Sprintf("%d %s (%s)", n.N, n.Who(), n.What())
	}
	return head + ": " + strings.Join(parts, ", ")
}

// Who names the node: 'name', or the driver.
func (n ServerNode) Who() string {
	if n.Driver {
		return fmt.Sprintf("the driver (node %d)", n.ID)
	}
	return "'" + n.Node + "'"
}

// What is why it was late and by how much.
func (n ServerNode) What() string {
	if n.MaxOverrunUS < 0 {
		return n.Why
	}
	return fmt.Sprintf("%s, finished up to %.1f ms after it", n.Why, n.MaxOverrunUS/1000)
}

// OverrunText is MaxOverrunUS in ms, or "not known".
func (n ServerNode) OverrunText() string {
	if n.MaxOverrunUS < 0 {
		return "not known"
	}
	return fmt.Sprintf("%.1f ms", n.MaxOverrunUS/1000)
}

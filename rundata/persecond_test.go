package rundata

import (
	"encoding/json"
	"math"
	"testing"
)

// A second with no figure is null in JSON and NaN again once read: never
// a zero, and never a JSON error.
func TestPerSecondJSON(t *testing.T) {
	b, err := json.Marshal(Sound{RoundTripPerSecond: PerSecond{21.5, math.NaN(), 22}})
	if err != nil {
		t.Fatal(err)
	}
	var s Sound
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	p := s.RoundTripPerSecond
	if len(p) != 3 || p[0] != 21.5 || !math.IsNaN(p[1]) || p[2] != 22 {
		t.Errorf("%s read back as %v, want [21.5 NaN 22]", b, p)
	}
	if b, _ := json.Marshal(Sound{}); json.Valid(b) && string(b) != "" {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if _, ok := m["round_trip_ms_per_second"]; ok {
			t.Errorf("%s: an empty series is written", b)
		}
	}
}

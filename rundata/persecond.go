package rundata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// PerSecond is a figure for each second of a phase, NaN in a second that
// has none. JSON has no NaN: such a second is null there, so that a
// reader neither fails on it nor takes it for a zero.
type PerSecond []float64

// MarshalJSON writes NaN as null.
func (p PerSecond) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
			continue
		}
		f, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("second %d: %w", i, err)
		}
		b.Write(f)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads null as NaN.
func (p *PerSecond) UnmarshalJSON(b []byte) error {
	var vs []*float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return fmt.Errorf("per second: %w", err)
	}
	if vs == nil {
		*p = nil
		return nil
	}
	out := make(PerSecond, len(vs))
	for i, v := range vs {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	*p = out
	return nil
}

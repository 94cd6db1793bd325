package stress

import (
	"fmt"
	"strconv"
	"strings"
)

// size is a byte count given as a flag: 1073741824, 512M, 1G, 1GiB, 64k.
// K, M, G and T are powers of 1024, as dd's and most tools' suffixes are.
type size struct {
	bytes int64
	set   bool
}

func (s *size) String() string {
	if s == nil {
		return "0"
	}
	return formatSize(s.bytes)
}

func (s *size) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	s.bytes, s.set = n, true
	return nil
}

func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(strings.TrimSuffix(u, "B"), "I")
	mult := int64(1)
	if u != "" {
		switch u[len(u)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			u = u[:len(u)-1]
		}
	}
	n, err := strconv.ParseFloat(u, 64)
	if err != nil || n <= 0 || n*float64(mult) >= 1<<62 || (mult == 1 && n != float64(int64(n))) {
		return 0, fmt.Errorf("want a positive size such as 512M or 1G (K, M, G, T: powers of 1024)")
	}
	return int64(n * float64(mult)), nil
}

// formatSize writes n the way parseSize reads it, exactly when it can.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// humanSize is n for a message: 1.5G, 300M.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "G"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "M"
	default:
		return strconv.FormatInt(n, 10) + " bytes"
	}
}

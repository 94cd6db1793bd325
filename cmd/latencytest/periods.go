package main

import (
	"fmt"
	"strconv"
	"strings"
)

// periodList is --period: one size in frames, or a comma-separated list
// to run the whole suite once per size.
type periodList struct {
	sizes []int
}

func (p *periodList) String() string {
	s := make([]string, len(p.sizes))
	for i, n := range p.sizes {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (p *periodList) Set(v string) error {
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not a number of frames (one size, or a list such as 32,64,128)", f)
		}
		for _, s := range sizes {
			if s == n {
				return fmt.Errorf("%d frames given twice", n)
			}
		}
		sizes = append(sizes, n)
	}
	p.sizes = sizes
	return nil
}

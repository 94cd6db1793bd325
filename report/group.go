package report

import (
	"runtime"
	"sync"
)

// group runs functions concurrently, no more at a time than there are
// CPUs: each one holds a samples file's pass or a figure being drawn, so
// the memory in use at once is bounded by the CPUs, not by how many phases
// or inputs a file names.
type group struct {
	wg  sync.WaitGroup
	sem chan struct{}
}

func newGroup() *group { return &group{sem: make(chan struct{}, runtime.GOMAXPROCS(0))} }

// Go runs f once a slot is free.
func (g *group) Go(f func()) {
	g.wg.Go(func() {
		g.sem <- struct{}{}
		defer func() { <-g.sem }()
		f()
	})
}

// Wait waits for every function started.
func (g *group) Wait() { g.wg.Wait() }

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// run --repeat 3 --tests idle,hackbench: six phases in order, each with
// its repetition, and the report's run-to-run table has a row per
// repetition (and the pooled figures) for each phase.
func TestRunRepeat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--repeat", "3", "--tests", "idle,hackbench", "--duration", "5s",
		"--hackbench-groups", "2", "--periods", "8", "--out", out, "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	var got []string
	for _, ph := range run.Phases {
		got = append(got, fmt.Sprintf("%s#%d", ph.Name, ph.Repeat))
	}
	if want := "idle#1 hackbench#1 idle#2 hackbench#2 idle#3 hackbench#3"; strings.Join(got, " ") != want || run.Repeat != 3 {
		t.Fatalf("phases %v (repeat %d), want %s", got, run.Repeat, want)
	}
	if n := strings.Count(r.stderr, "repetition "); n != 3 {
		t.Errorf("%d repetition lines on the terminal, want 3", n)
	}
	b, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"idle", "hackbench"} {
		rows := 0
		var walk func(n *html.Node, in bool)
		walk = func(n *html.Node, in bool) {
			if n.Type == html.ElementNode && n.Data == "table" {
				for _, a := range n.Attr {
					in = in || (a.Key == "id" && a.Val == "spread-"+name)
				}
			}
			if in && n.Type == html.ElementNode && n.Data == "tr" {
				for _, a := range n.Attr {
					if a.Key == "data-phase" && strings.HasPrefix(a.Val, name+" #") {
						rows++
					}
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c, in)
			}
		}
		walk(doc, false)
		if rows != 3 {
			t.Errorf("run-to-run table of %s: %d repetition rows, want 3", name, rows)
		}
	}
}

package testhook

import (
	"context"
	"testing"
	"time"
)

func TestStall(t *testing.T) {
	ctx := context.Background()
	if s, ok := StallOf(ctx); ok {
		t.Fatalf("StallOf(Background) = %+v, true; want none", s)
	}
	if _, ok := StallOf(WithStall(ctx, Stall{At: 5})); ok {
		t.Fatal("a stall of 0 is carried; want none")
	}
	want := Stall{At: 100, For: 300 * time.Millisecond}
	child, cancel := context.WithCancel(WithStall(ctx, want))
	defer cancel()
	if s, ok := StallOf(child); !ok || s != want {
		t.Fatalf("StallOf = %+v, %v; want %+v, true", s, ok, want)
	}
}

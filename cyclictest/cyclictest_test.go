package cyclictest

import "testing"

func TestCyclictestCmdline(t *testing.T) {
	for cmd, want := range map[string][2]int64{
		"cyclictest -m -p80 -i1000 -l 2000 -h 200 -q": {200, 1000},
		"cyclictest -H400 --interval=250":             {400, 250},
		"cyclictest --histogram 50 -i 500 -t2":        {50, 500},
		"cyclictest --histofall=70":                   {70, 0},
		"cyclictest -q":                               {0, 0},
		"cyclictest -h 9000000000000000000":           {9e18, 0},
		"cyclictest -h 99999999999999999999":          {1<<63 - 1, 0},
	} {
		if h, i := histRange(cmd), cmdlineInt(cmd, []string{"-i"}, []string{"--interval"}); h != want[0] || i != want[1] {
			t.Errorf("%q: histogram %d interval %d, want %v", cmd, h, i, want)
		}
	}
}

func TestCyclictestRejects(t *testing.T) {
	for _, in := range []string{"", "hello\n", "# Histogram\n000000 000001\n", "{\"thread\": {}}", "{not json"} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

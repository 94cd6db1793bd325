package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/metrics"
)

// The reference: Debian's Prometheus server scrapes `latencytest monitor`
// every second. The periods it last scraped are the periods the results
// directory holds, less those measured since that scrape; the 99th
// percentile it estimates from the histogram's buckets is the results
// directory's, within one bucket.
func TestMonitorPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("no prometheus server: scripts/setup test installs Debian's prometheus package")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "res")
	cmd, se := started(t, nil, "metrics: http://", "monitor", "--rotate", "1h", "--out", out, "--listen", "127.0.0.1:0")
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	target := strings.TrimSuffix(strings.SplitN(strings.SplitN(se.String(), "metrics: http://", 2)[1], "\n", 2)[0], "/metrics")
	api := startPrometheus(t, bin, dir, target)

	// Several scrapes; the dashboard's queries; a stop just after a fresh
	// scrape.
	deadline := time.Now().Add(40 * time.Second)
	for len(scrapeTimes(t, api)) < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has not scraped the monitor 8 times in 40 s\nmonitor: %s", se)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dashboardQueries(t, api)
	for last := scrapeTimes(t, api); ; time.Sleep(20 * time.Millisecond) {
		if ts := scrapeTimes(t, api); ts[len(ts)-1] != last[len(last)-1] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus stopped scraping the monitor\nmonitor: %s", se)
		}
	}
	stopped := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	if code, _ := exitCode(t, cmd, stopped); code != 130 {
		t.Fatalf("monitor: exit %d, want 130: %s", code, se)
	}
	names := rotations(t, out)
	if len(names) != 1 {
		t.Fatalf("rotations %v, want one", names)
	}
	run := readRun(t, filepath.Join(out, names[0]))
	ph := run.Phases[0]

	scraped := query(t, api, "last_over_time(latencytest_periods_total[5m])")
	perScrape := 1.0 * float64(run.Rate) / float64(run.PeriodFrames) // periods in one scrape interval
	if d := float64(ph.Periods) - scraped; d < 0 || d > perScrape {
		t.Errorf("Prometheus scraped %v periods, the results directory holds %d: %v apart, allowed 0 to %v (one scrape interval)",
			scraped, ph.Periods, d, perScrape)
	}
	if x := query(t, api, "last_over_time(latencytest_xruns_total[5m])"); x > float64(ph.Xruns) {
		t.Errorf("Prometheus scraped %v xruns, the results directory holds %d", x, ph.Xruns)
	}

	p99 := query(t, api, "histogram_quantile(0.99, last_over_time(latencytest_wakeup_latency_seconds_bucket[5m]))")
	got, want := bucketOf(p99), bucketOf(ph.Latency.P99/1e6)
	if got-want > 1 || want-got > 1 {
		t.Errorf("Prometheus's p99 %.1f µs is in bucket %d, the results directory's %.1f µs in bucket %d: more than one apart (buckets %v)",
			p99*1e6, got, ph.Latency.P99, want, metrics.Buckets)
	}
	t.Logf("periods: results %d, Prometheus %v; p99: results %.1f µs, Prometheus %.1f µs", ph.Periods, scraped, ph.Latency.P99, p99*1e6)
}

// bucketOf is the index of the histogram bucket that holds v seconds
// (len(metrics.Buckets): +Inf).
func bucketOf(v float64) int {
	for i, le := range metrics.Buckets {
		if v <= le {
			return i
		}
	}
	return len(metrics.Buckets)
}

// startPrometheus starts the prometheus server on a free localhost port,
// with its storage in dir, scraping target every second; it is stopped
// and its files removed when the test ends. It returns the API's base URL.
func startPrometheus(t *testing.T, bin, dir, target string) string {
	t.Helper()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: latencytest\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		port := freePort(t)
		logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
		if err != nil {
			t.Fatal(err)
		}
		p := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
		p.Stdout, p.Stderr = logf, logf
		p.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { p.Wait(); logf.Close(); close(exited) }()
		t.Cleanup(func() {
			p.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				p.Process.Kill()
				<-exited
			}
		})
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		if ready(base, exited) {
			return base
		}
		log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
		if try == 2 || !strings.Contains(string(log), "address already in use") {
			t.Fatalf("prometheus did not become ready:\n%s", log)
		}
	}
}

// ready waits for the server's readiness endpoint, until it exits or 30 s.
func ready(base string, exited chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// apiResult is the query API's answer.
type apiResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value  []any   `json:"value"`
			Values [][]any `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

func apiQuery(t *testing.T, api, q string) apiResult {
	t.Helper()
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r apiResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, r.Error)
	}
	return r
}

// query is the value of an instant query that yields one series.
func query(t *testing.T, api, q string) float64 {
	t.Helper()
	r := apiQuery(t, api, q)
	if len(r.Data.Result) != 1 || len(r.Data.Result[0].Value) != 2 {
		t.Fatalf("query %s: %+v, want one series", q, r.Data)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		t.Fatalf("query %s: value %q", q, s)
	}
	return v
}

// scrapeTimes is when Prometheus has scraped the monitor's periods in the
// last minute (Unix seconds).
func scrapeTimes(t *testing.T, api string) []float64 {
	t.Helper()
	r := apiQuery(t, api, "latencytest_periods_total[1m]")
	if len(r.Data.Result) == 0 {
		return nil
	}
	var ts []float64
	for _, v := range r.Data.Result[0].Values {
		if f, ok := v[0].(float64); ok {
			ts = append(ts, f)
		}
	}
	return ts
}

// dashboardQueries runs every query of the Grafana dashboard
// (docs/grafana-dashboard.json), its variables filled in as Grafana
// would, and checks Prometheus answers each with data: the dashboard's
// metric names, labels and functions are the monitor's. Only the spike
// causes are empty (no --trace here).
func dashboardQueries(t *testing.T, api string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	fill := strings.NewReplacer("$host", ".*", "$period", ".*", "$__rate_interval", "4s", "$__interval", "4s", "$__range", "1m")
	types := map[string]bool{}
	for _, p := range dash.Panels {
		types[p.Type] = true
		for _, tg := range p.Targets {
			r := apiQuery(t, api, fill.Replace(tg.Expr))
			if strings.Contains(tg.Expr, "latencytest_spikes_total") {
				continue
			}
			if len(r.Data.Result) == 0 {
				t.Errorf("dashboard panel %q: %s: no data", p.Title, tg.Expr)
			}
			for _, series := range r.Data.Result {
				if v, _ := series.Value[1].(string); v == "NaN" {
					t.Errorf("dashboard panel %q: %s: NaN", p.Title, tg.Expr)
				}
			}
		}
	}
	if !types["heatmap"] {
		t.Error("dashboard: no heat map panel")
	}
}

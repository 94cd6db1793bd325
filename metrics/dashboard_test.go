//go:build !race

// Not under the race detector: it builds grafana-foundation-sdk with
// -race only to check a JSON file, no goroutine in sight (make race).

package metrics

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// TestDashboardSchema decodes docs/grafana-dashboard.json strictly against
// Grafana's dashboard schema (its Foundation SDK, generated from the
// schema Grafana loads dashboards by): no field missing that the schema
// requires, none it does not know, every panel a plugin it knows, with
// that plugin's options. Grafana itself is not a Debian package; the
// dashboard's queries are run against a real Prometheus by
// TestMonitorPrometheus (cmd/latencytest).
func TestDashboardSchema(t *testing.T) {
	b, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := strict(d.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("docs/grafana-dashboard.json against Grafana's schema: %v", err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	// Each panel's options and custom field config are checked strictly
	// by its plugin's schema only when the plugin is one the SDK knows.
	var raw struct{ Panels []struct{ Type string } }
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Panels) == 0 {
		t.Fatal("docs/grafana-dashboard.json: no panels")
	}
	for i, p := range raw.Panels {
		if cfg, ok := cog.ConfigForPanelcfgVariant(p.Type); !ok || cfg.StrictOptionsUnmarshaler == nil {
			t.Errorf("panel %d: type %q, not a panel plugin of Grafana's schema", i, p.Type)
		}
	}
}

// strict is the error of a strict decoding: nil when its list of errors,
// returned typed even when empty, is empty.
func strict(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

package relockprom_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	relockprom "github.com/relock-go/relock/prometheus"
)

// The Grafana dashboard in the repository (dashboards/relock.json) queries
// only metrics the Collector exports, and every metric it exports that an
// operator watches appears on it.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../dashboards/relock.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}

	exported := map[string]bool{}
	descs := make(chan *prometheus.Desc, 64)
	go func() { relockprom.New().Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range descs {
		exported[fqName.FindStringSubmatch(d.String())[1]] = true
	}

	queried := map[string]bool{}
	metric := regexp.MustCompile(`relock_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, name := range metric.FindAllString(target.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
						name = base
					}
				}
				if !exported[name] {
					t.Errorf("panel %q queries %s, which the Collector does not export", p.Title, name)
				}
				queried[name] = true
			}
		}
	}
	for name := range exported {
		if !queried[name] && name != "relock_renewal_batch_size" {
			t.Errorf("%s is on no panel of the dashboard", name)
		}
	}
}

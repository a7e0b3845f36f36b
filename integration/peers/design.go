package peers

import (
	"context"
	"time"
)

// DesignGroup is the design document's table at one node count: every
// library with DesignClients goroutines, each with its own Process (as
// separate services would have) and its own key, locking and unlocking in a
// loop, interleaved in rounds with the PINGs of Refs.
type DesignGroup struct {
	Nodes int
	Runs  []*Load
	Refs  []RefDist
}

// DesignFigure is a row of the design document's own table: acquire latency
// p50 and throughput at Nodes masters.
type DesignFigure struct {
	Nodes     int
	P50       time.Duration
	PerSecond float64
}

// DesignFigures are the design document's figures, shown as a reference row.
var DesignFigures = []DesignFigure{
	{Nodes: 1, P50: 2 * time.Millisecond, PerSecond: 5000},
	{Nodes: 3, P50: 5 * time.Millisecond, PerSecond: 2000},
	{Nodes: 5, P50: 8 * time.Millisecond, PerSecond: 1200},
}

func designFigure(n int) *DesignFigure {
	for i := range DesignFigures {
		if DesignFigures[i].Nodes == n {
			return &DesignFigures[i]
		}
	}
	return nil
}

// runDesign runs the design document's table on the first n masters of srv.
func runDesign(ctx context.Context, cfg Config, libs []Lib, srv Servers, n int, failed func(what string, err error)) (*DesignGroup, error) {
	refs, closeRefs := references(srv, []int{n})
	defer closeRefs()
	runs, dists, err := runLoads(ctx, cfg, libs, srv, []int{n}, cfg.DesignClients, max(cfg.DesignPool, 1), refs, failed)
	if err != nil {
		return nil, err
	}
	return &DesignGroup{Nodes: n, Runs: runs, Refs: dists}, nil
}

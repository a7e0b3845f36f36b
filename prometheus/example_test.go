package relockprom_test

import (
	"context"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	relockprom "github.com/relock-go/relock/prometheus"
)

// Wiring: one Collector, registered once, observing the Client. It needs
// Redis, so it has no checked output; the integration module runs the same
// against Redis in containers.
func Example() {
	metrics := relockprom.New()
	prometheus.MustRegister(metrics)

	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, err := lock.New(lock.Options{
		Nodes:    []redis.UniversalClient{rdb},
		Observer: metrics.Observer(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	http.Handle("/metrics", promhttp.Handler())
	_ = c.Do(context.Background(), "orders:42", func(ctx context.Context) error {
		return nil // relock_acquire_total{outcome="acquired"} is 1 now
	})
}

// A lock label bounded by the names' prefix: "orders:42" and "orders:7"
// count under lock="orders". Several Clients told apart by a constant
// label on the registerer.
func ExampleWithLockLabel() {
	metrics := relockprom.New(relockprom.WithLockLabel(relockprom.Prefix(":")))
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"client": "billing"}, prometheus.DefaultRegisterer)
	reg.MustRegister(metrics)

	c, err := lock.New(lock.Options{
		Nodes:    []redis.UniversalClient{redis.NewClient(&redis.Options{Addr: "localhost:6379"})},
		Observer: metrics.Observer(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

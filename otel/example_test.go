package relockotel_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"

	"github.com/relock-go/relock/lock"
	relockotel "github.com/relock-go/relock/otel"
)

// Wiring with the global providers: Do's span is a child of the caller's,
// its Lock and Unlock spans are children of Do's, and the go-redis commands
// of each (seen by a redisotel hook on rdb, if installed) are children of
// those. It needs Redis, so it has no checked output.
func Example() {
	inst, err := relockotel.New()
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{rdb}, Observer: inst.Observer()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, span := otel.Tracer("billing").Start(context.Background(), "charge")
	defer span.End()
	_ = c.Do(ctx, "orders:42", func(ctx context.Context) error {
		return nil // ctx carries relock.Do's span
	})
}

// Prometheus and OpenTelemetry at once, through lock.Merge; lock names on
// spans, a bounded lock label on metrics.
func ExampleWithSpanLockName() {
	inst, err := relockotel.New(
		relockotel.WithSpanLockName(func(name string) string { return name }),
		relockotel.WithLockLabel(relockotel.Prefix(":")),
	)
	if err != nil {
		log.Fatal(err)
	}
	other := &lock.Observer{Loss: func(e lock.LossInfo) { log.Printf("lost %s: %s", e.Name, e.Reason) }}
	c, err := lock.New(lock.Options{
		Nodes:    []redis.UniversalClient{redis.NewClient(&redis.Options{Addr: "localhost:6379"})},
		Observer: lock.Merge(inst.Observer(), other),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

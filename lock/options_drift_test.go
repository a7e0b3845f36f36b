package lock

import (
	"errors"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A NaN compares false with everything, so a range check written as
// "f < 0 || f >= 0.5" lets it through; every acquire would then fail.
func TestClockDriftFactorRejectsNaNAndInfinities(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := Options{Nodes: []redis.UniversalClient{rdb}, ClockDriftFactor: f}.withDefaults()
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ClockDriftFactor %v: got %v, want ErrInvalidArgument", f, err)
		}
	}
}

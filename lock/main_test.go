package lock_test

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/integration/fixture"
)

// examples is a one-node cluster in a container for the runnable examples.
var examples *fixture.Cluster

func TestMain(m *testing.M) { os.Exit(fixture.Main(m, 1, &examples)) }

// redisNodes stands for the caller's own go-redis clients of independent
// masters; the examples run against a Redis container.
func redisNodes() []redis.UniversalClient { return examples.Clients() }

// Package peers measures relock side by side with other Go lock libraries
// (go-redsync/redsync, bsm/redislock, rueidis' rueidislock) on the same Redis
// servers in one run, together with the ceiling of those servers (the
// go-redis PING round trip and redis-benchmark's EVALSHA throughput), and
// renders the results as markdown tables with the ratios of the project's performance targets (README, Performance).
//
// It lives in its own module so that the library never depends on the peers.
// The command cmd/relock-bench starts the servers in containers through the
// integration fixture and runs every scenario; bench_test.go smokes the same
// code with tiny settings.
//
// Each library is driven through the small Process and Mutex interfaces of
// libs.go; a Process stands for one client process (its own connections),
// so a scenario can give every goroutine its own Process, as separate
// services would, or share one among all goroutines.
package peers

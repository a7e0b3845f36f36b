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
//
// The scenarios, in the order they run (Scenarios), at 1, 3 and 5 masters
// (MasterCounts; the command starts 5):
//
//   - ceiling: PING round trips (one master; 3 and 5 in parallel) and
//     EVALSHA throughput (go-redis, redis-benchmark);
//   - contended: 16 goroutines on one name, each with its own Process
//     ("per goroutine", every count) or one shared Process (up to 3
//     masters); the rows include "relock (split votes, before)" and
//     "relock (no wait queue, before)", relock's Clients made with
//     internal/abtest.SplitVotes or NoWaitQueue set, the A/B of the
//     contention protocol; the rows of one master count run in interleaved
//     rounds (Config.ContendedRounds), each pooling its rounds;
//   - uncontended and sequential: 64 goroutines, a key each, or one, on one
//     shared Process, interleaved in rounds;
//   - design: the design document's table, 100 goroutines each with its own
//     Process (pool 2 per node) and its own key, relock and redsync beside
//     the document's own figures;
//   - watchdog: thousands of held locks renewed by relock (1 and 3 masters).
//
// Every scenario but the ceiling and the watchdog reports server commands
// per acquisition: INFO commandstats deltas summed over the masters (so
// also the commands scripts run), less the bench's own INFO.
//
// A subset: the command's -scenarios, -libs and -masters flags, or the
// environment variables RELOCK_BENCH_ONLY, RELOCK_BENCH_LIBS and
// RELOCK_BENCH_MASTERS that set their defaults, also through make. The
// contended A/B of relock's protocol alone, at 3 and 5 masters, in about a
// minute:
//
//	RELOCK_BENCH_ONLY=contended RELOCK_BENCH_LIBS=relock RELOCK_BENCH_MASTERS=3,5 make bench
//
// and with the design table and redsync beside it:
//
//	RELOCK_BENCH_ONLY=contended,design RELOCK_BENCH_LIBS=relock,redsync make bench
//
// A library's name after '=' selects it alone, not every name containing
// it: relock with its default options, without the A/B's variants, for an
// A/B of two builds by hand:
//
//	RELOCK_BENCH_ONLY=contended RELOCK_BENCH_LIBS='=relock' make bench
//
// The whole run takes about 6 minutes on 2 cores; -quick about a minute.
package peers

package fanout

import "github.com/pushd/pushd/internal/faultpoint"

// Fault points between the durable writes of the fan-out path, in the order a push meets them
// (e2e/fanout_crash_test.go kills pushd at each and checks that nothing is lost):
//
//	planner: record in-process with its task count → tasks appended → job offset committed
//	worker, per batch: daily volume reserved → batch sent → checkpoint written
//	worker, at the end: final progress (Done) → counts added to the record (task done, push
//	done with the last task) → task offset committed
var (
	fpPlannerAfterRecord  = faultpoint.Define("fanout/planner-after-record")
	fpPlannerAfterTasks   = faultpoint.Define("fanout/planner-after-tasks")
	fpWorkerAfterReserve  = faultpoint.Define("fanout/worker-after-reserve")
	fpWorkerAfterSend     = faultpoint.Define("fanout/worker-after-send")
	fpWorkerAfterCheckpt  = faultpoint.Define("fanout/worker-after-checkpoint")
	fpWorkerAfterFinal    = faultpoint.Define("fanout/worker-after-final-progress")
	fpWorkerAfterComplete = faultpoint.Define("fanout/worker-after-complete")
)

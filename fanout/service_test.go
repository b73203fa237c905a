package fanout

import (
	"github.com/pushd/pushd/internal/service"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/queue/kafka"
	"github.com/pushd/pushd/store/pebble"
)

// The roles are services, and the real store, logs and sender shapes fit the narrow views.
var (
	_ service.Service = (*Planner)(nil)
	_ service.Service = (*Worker)(nil)
	_ PlannerStore    = (*pebble.Store)(nil)
	_ WorkerStore     = (*pebble.Store)(nil)
	_ Log             = (*embedded.Log)(nil)
	_ Log             = (*kafka.Log)(nil)
	_ Log             = queue.Log(nil)
)

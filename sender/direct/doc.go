// Package direct owns the own Android channel (the gateway role): devices without a vendor
// channel keep one WebSocket connection to pushd and receive their pushes on it.
//
// One delivery core (Core: connections by installation, offline cache, acks, counts) sits under
// a wire codec. Server speaks ours, JSON text frames on /1.1/connect (docs/own-channel.md); the
// original service's protobuf protocol is a second codec to plug in beside it (issue 22): a
// codec authenticates a device, calls Core.Attach with a Session that writes its frames, and
// hands the device's acks to Core.Ack.
//
// Flow: fan-out hands own-channel targets to Handoff, which appends them to push.direct keyed
// by installation id. Core consumes the partitions this node owns; for each message it first
// stores it in the installation's offline cache (which counts it sent on its push record, once
// however often the message is consumed), then writes it to the device if it is connected. The
// offset is committed after the cache write, so a crash loses nothing: whatever was cached is
// flushed, in order, when the device connects again, and stays until acked or expired. An ack
// removes it and counts an arrival.
//
// Cluster (Core.Cluster, Kafka mode): several gateway nodes share push.direct in one consumer
// group. A node serves only the devices of the partitions its consumer owns (the hash Handoff
// keys by); it refuses the others with CloseMoved and moves its devices away when a rebalance
// or its stop takes their partition. Advertiser keeps the node's URL and partitions in the
// store's registry, where the routers (api) look up a device's node. The offline cache is
// shared, so the new owner flushes what the old one cached.
//
// Concurrency: Core and Server are safe for concurrent use. An attached connection is read
// by the epoll loop (Config.ReadLoop, Linux's default: no goroutine while idle, one per ready
// frame, one at a time per connection) or by a goroutine of its own; writes to a connection
// are serialised by its session and bounded by a deadline.
package direct

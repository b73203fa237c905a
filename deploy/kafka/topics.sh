#!/bin/sh
# Creates the pushd topics (CLUSTER.md). Same list as queue.DefaultPartitions, which
# queue/kafka.EnsureTopics creates from Go (tests, `pushd` bootstrap).
#
#   BOOTSTRAP=kafka-0:9092 ./topics.sh            # uses kafka-topics.sh from the Kafka distribution
#
# Partition counts are fixed for the life of a topic: push.tasks partition p owns buckets
# b with b mod 64 = p, so adding partitions would move buckets between workers mid-push.
# Replication 3 with min.insync.replicas=2: producers write with acks=all, so an accepted
# push survives the loss of one broker.
set -eu

BOOTSTRAP="${BOOTSTRAP:-localhost:9092}"
REPLICATION="${REPLICATION:-3}"
MIN_ISR="${MIN_ISR:-2}"
KAFKA_TOPICS="${KAFKA_TOPICS:-kafka-topics.sh}"

create() { # topic partitions retention.ms
	"$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
		--topic "$1" --partitions "$2" --replication-factor "$REPLICATION" \
		--config min.insync.replicas="$MIN_ISR" \
		--config retention.ms="$3" \
		--config cleanup.policy=delete
}

# Retention: long enough for a consumer group to be down for a while without losing work.
create push.jobs   16 604800000 # key: app id; group pushd-planner; 7 days
create push.tasks  64 604800000 # key: bucket; group pushd-fanout; 7 days
create push.direct 64 86400000  # key: installationId; group pushd-gateway; 1 day (messages expire sooner)

#!/usr/bin/env bash
# Create a Dataproc cluster with pixelflight on every node: the init action
# pixelflight-init.sh installs the files, and Spark properties (prefix
# spark:) turn on the executor plugin, one sidecar per executor with its
# own GPU.
#
#   BUCKET=my-bucket REGION=europe-west1 spark-conf/dataproc/create-cluster.sh my-cluster
#   MODE=daemon ... create-cluster.sh my-cluster      one sidecar per node instead
#
# First upload what the init action reads (from the repository root):
#   make build plugin wheel
#   gcloud storage cp bin/pixelflight spark-plugin/target/spark3.5/pixelflight-spark-plugin-spark3.5.jar \
#     spark-conf/discover-gpus.sh build/dist/pixelflight-0.1.0-py3-none-manylinux_2_34_x86_64.whl \
#     spark-conf/dataproc/pixelflight-init.sh gs://$BUCKET/pixelflight/
#
# GPUs: the workers get one NVIDIA T4 each and Google's GPU driver action,
# which also sets up YARN's GPU scheduling; ours runs after it.
set -euo pipefail

cluster=${1:?usage: create-cluster.sh CLUSTER_NAME}
bucket=${BUCKET:?set BUCKET}
region=${REGION:?set REGION}
mode=${MODE:-plugin}

# One executor per GPU; its tasks share the GPU through the one sidecar.
# Dataproc 2.2 and 2.3 run Spark 3.5: the jar is the plugin's Spark 3.5 build.
plugin=(
	spark:spark.jars=file:///opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar
	spark:spark.plugins=org.pixelflight.spark.PixelflightPlugin
	spark:spark.sql.extensions=org.pixelflight.spark.PixelflightExtensions
	spark:spark.pixelflight.binary=/opt/pixelflight/pixelflight
	spark:spark.pixelflight.startTimeout=30s
	spark:spark.executor.cores=4
	spark:spark.executor.resource.gpu.amount=1
	spark:spark.executor.resource.gpu.discoveryScript=/opt/pixelflight/discover-gpus.sh
	spark:spark.task.resource.gpu.amount=0.25
	spark:spark.sql.execution.arrow.maxRecordsPerBatch=64
)
# The node daemon: no plugin, the executors use the node's sidecar; the
# jar for the pixelflight data source.
daemon=(
	spark:spark.jars=file:///opt/pixelflight/pixelflight-spark-plugin-spark3.5.jar
	spark:spark.sql.extensions=org.pixelflight.spark.PixelflightExtensions
	spark:spark.executorEnv.PIXELFLIGHT_ENDPOINT=grpc://127.0.0.1:8815
	spark:spark.executor.cores=4
	spark:spark.sql.execution.arrow.maxRecordsPerBatch=64
)
metadata=pixelflight-url=gs://$bucket/pixelflight
case "$mode" in
plugin) props=("${plugin[@]}") ;;
daemon)
	props=("${daemon[@]}")
	metadata=$metadata,pixelflight-daemon=true
	;;
*)
	echo "MODE is plugin or daemon, not $mode" >&2
	exit 2
	;;
esac

gcloud dataproc clusters create "$cluster" \
	--region="$region" \
	--image-version=2.2-debian12 \
	--num-workers=2 \
	--worker-machine-type=n1-standard-8 \
	--worker-accelerator=type=nvidia-tesla-t4,count=1 \
	--initialization-actions="gs://goog-dataproc-initialization-actions-$region/gpu/install_gpu_driver.sh,gs://$bucket/pixelflight/pixelflight-init.sh" \
	--metadata="$metadata" \
	--properties="$(
		IFS=,
		echo "${props[*]}"
	)"

# Sourced by the bench scripts: the benchmark data folder, found the way `kvrun eval` finds bare data set names
# (lib/eval/eval_pipeline.cpp): $KVFUSE_DATA, else $KVFUSE_HOME/data (where `make data` puts the sets) when it
# exists, else ../shared/data beside the repository.
# Usage: . "$here/bench/data_dir.sh"; data=$(kvf_data_dir "$here")   (here: the repository root)
kvf_data_dir() {
  local home=${KVFUSE_HOME:-$HOME/.cache/kvfuse}
  if [ -n "${KVFUSE_DATA:-}" ]; then
    echo "$KVFUSE_DATA"
  elif [ -d "$home/data" ]; then
    echo "$home/data"
  else
    echo "$1/../shared/data"
  fi
}

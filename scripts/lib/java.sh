# shellcheck shell=bash
# Java helpers shared by the lab scripts (scripts/kafka/cluster.sh,
# scripts/kafka/mirror.sh). Sourced, never run; the sourcing script
# defines die.

# compile_java SRC LIBS DEST STAMP: compile SRC against every jar in LIBS
# into DEST with the JDK's javac module, and write STAMP (the cache key:
# a hash of what DEST was built from) to DEST/.sha256. DEST is replaced
# whole through a temporary directory beside it, so that nobody sees it
# half-written; the caller holds its install lock. Dies with javac's
# output when compiling fails.
compile_java() {
  local src=$1 libs=$2 dest=$3 stamp=$4 tmp jars
  tmp=$(mktemp -d "$dest.tmp.XXXXXX")
  # javac's module does not expand "dir/*" the way the javac launcher does.
  jars=$(printf '%s:' "$libs"/*.jar)
  if ! java -m jdk.compiler/com.sun.tools.javac.Main -nowarn -d "$tmp" \
    -cp "${jars%:}" "$src" >"$tmp.log" 2>&1; then
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    die "compiling $src against $libs failed (needs a JDK's jdk.compiler module, as TopicsBatch.java does)"
  fi
  rm -f "$tmp.log"
  printf '%s\n' "$stamp" >"$tmp/.sha256"
  rm -rf "$dest"
  mv "$tmp" "$dest"
}

# shellcheck shell=bash
# Java and Maven helpers shared by the lab scripts (scripts/kafka/cluster.sh,
# scripts/kafka/mirror.sh). Sourced, never run; the sourcing script
# defines log and die.

# need_java: die unless java is on the PATH.
need_java() {
  command -v java >/dev/null 2>&1 || die "java not found: run scripts/install-deps.sh kafka"
}

# tool_jvm_opts LOG4J_CONF: set TOOL_JVM_OPTS, the options of the lab's
# short-lived tool JVMs: start fast (C1 only, serial GC) and log warnings
# to stderr with LOG4J_CONF, so that stdout stays clean.
tool_jvm_opts() {
  # shellcheck disable=SC2034 # read by the sourcing script
  TOOL_JVM_OPTS=(
    -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData
    -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$1"
    -Dkafka.lab.loglevel=WARN -Dkafka.lab.logtarget=SYSTEM_ERR
  )
}

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

# mvn_copy_dependencies POM OUT LOG [ARG...]: copy the runtime jars POM
# lists into OUT with Maven (extra ARGs go to mvn), its output in LOG.
# Tried three times: scripts/install-deps.sh fetches every Kafka version at
# once into one local repository, which Maven 3.8 does not lock, so two
# processes fetching the same artifact can fail one of them ("...jar.part
# (No such file or directory)", seen on a fresh machine); the next attempt
# finds the artifact the other wrote. A lasting failure (no network) costs
# a few seconds more.
mvn_copy_dependencies() {
  local pom=$1 out=$2 logfile=$3 attempt
  shift 3
  for attempt in 1 2 3; do
    # mvn -q still prints ANSI noise on stdout; keep its output for errors only.
    if mvn -q -B -f "$pom" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$out" "$@" >"$logfile" 2>&1; then
      return 0
    fi
    ((attempt == 3)) && break
    log "maven failed (attempt $attempt of 3), trying again: $(grep -m1 ERROR "$logfile" | cut -c1-300)"
    sleep $((attempt * 2 + RANDOM % 3))
  done
  return 1
}

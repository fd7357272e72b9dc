// MirrorOffsets asks MirrorMaker 2's own client library where a consumer
// group of the source cluster would resume on the target cluster:
// org.apache.kafka.connect.mirror.RemoteClusterUtils.translateOffsets, which
// reads the checkpoints MirrorMaker wrote to <source alias>.checkpoints.internal
// on the target. It is what a consumer failing over to the target calls, so
// the lab tests compare the exporter's view of checkpoints with it.
//
// Usage (mirror.sh translate-offsets GROUP runs it):
//   java -cp <mirror jars>:<classes> MirrorOffsets CLIENT_PROPERTIES SOURCE_ALIAS GROUP TIMEOUT_MS
// CLIENT_PROPERTIES is a properties file for a client of the target cluster
// (bootstrap.servers, replication.policy.class, and whatever security the
// cluster needs: kept in a file so that no secret is on a command line).
//
// Output: one line per partition, "TOPIC<TAB>PARTITION<TAB>OFFSET", the
// target cluster's topic (remote name under the default policy), sorted.
// Exit status 0 on success (no line: no checkpoint for that group yet), 1 on
// an error (message on stderr), 2 on bad usage.
//
// Compiled once by mirror.sh into the cache (javac of the JDK module,
// as JEP 330's source launcher would, without paying for it on every call).
import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class MirrorOffsets {
    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: MirrorOffsets CLIENT_PROPERTIES SOURCE_ALIAS GROUP TIMEOUT_MS");
            System.exit(2);
        }
        try {
            Properties props = new Properties();
            try (InputStream in = new FileInputStream(args[0])) {
                props.load(in);
            }
            Map<String, Object> config = new HashMap<>();
            props.stringPropertyNames().forEach(k -> config.put(k, props.getProperty(k)));
            Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(
                    config, args[1], args[2], Duration.ofMillis(Long.parseLong(args[3])));
            List<String> lines = new ArrayList<>();
            offsets.forEach((tp, om) -> lines.add(tp.topic() + "\t" + tp.partition() + "\t" + om.offset()));
            lines.sort(null);
            lines.forEach(System.out::println);
            System.out.flush();
        } catch (Exception e) {
            System.err.println("MirrorOffsets: " + e);
            System.exit(1);
        }
        // The consumer's threads are closed by MirrorClient; exit anyway.
        System.exit(0);
    }
}

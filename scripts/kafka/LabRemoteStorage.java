// LabRemoteStorage is the lab's tiered storage (KIP-405) back end: a
// RemoteStorageManager that keeps "remote" segments in a local directory,
// which every node of a lab shares as they would share an object store.
// cluster.sh points remote.log.storage.manager.class.name at it when
// KAFKA_LAB_TIERED=1, with rsm.config.dir=$KAFKA_LAB_DIR/remote (the broker
// strips the rsm.config. prefix, so this class reads "dir").
//
// Why not Kafka's own LocalTieredStorage: it ships only in kafka-storage's
// test jar, which Maven Central serves for 4.3.1 but not for 4.4.0, and a
// test jar runs only on the broker of its own version. This class uses
// nothing but the public kafka-storage-api interface, unchanged from 4.3 to
// 4.4, so cluster.sh compiles it once per Kafka version against that
// version's jars into the cache, as mirror.sh does MirrorOffsets.
//
// Layout: DIR/<topic>-<partition>-<topic id>/<segment id>.<kind>, kind being
// log, index, timeindex, txnindex (when the segment has one), snapshot
// (producer state) and leader-epoch-checkpoint. A segment id is new on every
// copy attempt, so files of two attempts never mix.
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

public class LabRemoteStorage implements RemoteStorageManager {
    static final String DIR_CONFIG = "dir";
    private static final String LOG = "log";

    private Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get(DIR_CONFIG);
        if (dir == null || dir.toString().isEmpty()) {
            throw new IllegalArgumentException("LabRemoteStorage needs rsm.config." + DIR_CONFIG);
        }
        root = Path.of(dir.toString());
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new IllegalArgumentException("LabRemoteStorage: creating " + root + ": " + e, e);
        }
    }

    @Override
    public Optional<CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata metadata, LogSegmentData data)
            throws RemoteStorageException {
        RemoteLogSegmentId id = metadata.remoteLogSegmentId();
        try {
            Files.createDirectories(partitionDir(id.topicIdPartition()));
            // REPLACE_EXISTING: the interface asks a retried copy to overwrite.
            copy(data.logSegment(), file(id, LOG));
            copy(data.offsetIndex(), file(id, suffix(IndexType.OFFSET)));
            copy(data.timeIndex(), file(id, suffix(IndexType.TIMESTAMP)));
            if (data.transactionIndex().isPresent()) {
                copy(data.transactionIndex().get(), file(id, suffix(IndexType.TRANSACTION)));
            }
            copy(data.producerSnapshotIndex(), file(id, suffix(IndexType.PRODUCER_SNAPSHOT)));
            // The leader epochs come as checkpoint file bytes, not a file.
            try (FileChannel out = FileChannel.open(file(id, suffix(IndexType.LEADER_EPOCH)),
                    StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                // A duplicate, so the caller's buffer keeps its position.
                ByteBuffer epochs = data.leaderEpochIndex().duplicate();
                while (epochs.hasRemaining()) {
                    out.write(epochs);
                }
            }
        } catch (IOException e) {
            throw new RemoteStorageException("copying segment " + id + " to " + partitionDir(id.topicIdPartition()), e);
        }
        return Optional.empty();
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition)
            throws RemoteStorageException {
        return open(metadata.remoteLogSegmentId(), LOG, startPosition, Long.MAX_VALUE);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        if (endPosition < startPosition) {
            throw new IllegalArgumentException("end position " + endPosition + " before start position " + startPosition);
        }
        // Both positions are inclusive, as the interface documents.
        return open(metadata.remoteLogSegmentId(), LOG, startPosition, endPosition + 1L);
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType indexType)
            throws RemoteStorageException {
        // A segment without a transaction index has no file: open throws
        // RemoteResourceNotFoundException, which the broker's index cache
        // takes as an empty index.
        return open(metadata.remoteLogSegmentId(), suffix(indexType), 0, Long.MAX_VALUE);
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        RemoteLogSegmentId id = metadata.remoteLogSegmentId();
        try {
            // deleteIfExists: a retried delete must succeed (the interface
            // asks for idempotence). The partition's directory stays: a copy
            // for the same partition may be creating files in it right now.
            Files.deleteIfExists(file(id, LOG));
            for (IndexType type : IndexType.values()) {
                Files.deleteIfExists(file(id, suffix(type)));
            }
        } catch (IOException e) {
            throw new RemoteStorageException("deleting segment " + id, e);
        }
    }

    @Override
    public void close() {
    }

    private Path partitionDir(TopicIdPartition partition) {
        return root.resolve(partition.topic() + "-" + partition.partition() + "-" + partition.topicId());
    }

    private Path file(RemoteLogSegmentId id, String suffix) {
        return partitionDir(id.topicIdPartition()).resolve(id.id() + "." + suffix);
    }

    // The suffixes of the local log's own files, so a remote directory reads
    // like a partition's.
    private static String suffix(IndexType type) {
        switch (type) {
            case OFFSET: return "index";
            case TIMESTAMP: return "timeindex";
            case PRODUCER_SNAPSHOT: return "snapshot";
            case TRANSACTION: return "txnindex";
            case LEADER_EPOCH: return "leader-epoch-checkpoint";
            default: throw new IllegalArgumentException("unknown index type " + type);
        }
    }

    private static void copy(Path from, Path to) throws IOException {
        Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
    }

    // open streams the bytes [start, end) of a segment's file, or up to its
    // end when that is shorter.
    private InputStream open(RemoteLogSegmentId id, String suffix, long start, long end)
            throws RemoteStorageException {
        if (start < 0) {
            throw new IllegalArgumentException("negative start position " + start);
        }
        Path path = file(id, suffix);
        try {
            return new RangeStream(FileChannel.open(path, StandardOpenOption.READ), start, end);
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("segment " + id + ": no " + path, e);
        } catch (IOException e) {
            throw new RemoteStorageException("segment " + id + ": opening " + path, e);
        }
    }

    // RangeStream reads a range of a file with positional reads: the JDK has
    // no bounded stream, and a range may be large (segment.bytes is 1 GiB by
    // default), so it is not read into memory at once.
    private static final class RangeStream extends InputStream {
        private final FileChannel channel;
        private long position;
        private final long end;

        RangeStream(FileChannel channel, long start, long end) {
            this.channel = channel;
            this.position = start;
            this.end = end;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            if (length == 0) {
                return 0;
            }
            if (position >= end) {
                return -1;
            }
            int n = channel.read(ByteBuffer.wrap(buffer, offset, (int) Math.min(length, end - position)), position);
            if (n > 0) {
                position += n;
            }
            return n;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}

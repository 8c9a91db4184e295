/*
 * A tiny Kafka Streams application for the tests (demo/kafka_streams.py compiles and runs it):
 * it counts the values of its input topic, so its topology has two subtopologies, a repartition
 * topic between them and a changelog topic (an in-memory store: no RocksDB at run time).
 *
 *   java -cp <kafka-streams jars>:<classes> KgroupsStreamsApp <streams.properties> <input> <output>
 *
 * The properties file holds the Streams configuration (application.id, bootstrap.servers,
 * group.protocol=streams, ...). Each state change is printed as "KGROUPS-STREAMS-STATE <new>"
 * for the launcher to wait on. SIGTERM closes the application and leaves its group (the
 * shutdown hook), so the group is Empty at once instead of after the session timeout.
 */

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public final class KgroupsStreamsApp {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: KgroupsStreamsApp <streams.properties> <input topic> <output topic>");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[1], Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, value) -> value, Grouped.with("by-value", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .to(args[2], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(props), props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("KGROUPS-STREAMS-STATE " + now);
            System.out.flush();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(20)));
            System.out.println("KGROUPS-STREAMS-CLOSED");
            System.out.flush();
            closed.countDown();
        }, "kgroups-streams-shutdown"));
        streams.start();
        closed.await();
    }
}

// The admin calls a generated scenario asks a live broker (issue 36), in one JVM instead of one
// kafka-*.sh tool each: DescribeLogDirs (sizes), DescribeProducers (3.0+), ListTransactions and
// DescribeTransactions (3.0+). Compiled by tests/kafka/scenarios/oracle.py against the kafka-clients jar of a
// release and run with the broker's own release on the class path. Prints one JSON object per line.
//
// usage: Oracle BOOTSTRAP TOPIC:PARTITION...
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;

public class Oracle {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "30000");
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            int c = args[i].lastIndexOf(':');
            tps.add(new TopicPartition(args[i].substring(0, c), Integer.parseInt(args[i].substring(c + 1))));
        }
        try (Admin admin = Admin.create(props)) {
            Map<Integer, Map<String, LogDirDescription>> dirs =
                admin.describeLogDirs(Collections.singletonList(1)).allDescriptions().get();
            for (Map<String, LogDirDescription> byDir : dirs.values())
                for (LogDirDescription d : byDir.values())
                    for (Map.Entry<TopicPartition, ReplicaInfo> e : d.replicaInfos().entrySet())
                        System.out.println("{\"type\":\"size\",\"topic\":" + q(e.getKey().topic()) + ",\"partition\":"
                            + e.getKey().partition() + ",\"size\":" + e.getValue().size() + "}");
            try {
                DescribeProducersResult res = admin.describeProducers(tps);
                for (TopicPartition tp : tps) {
                    for (ProducerState p : res.partitionResult(tp).get().activeProducers()) {
                        System.out.println("{\"type\":\"producer\",\"topic\":" + q(tp.topic()) + ",\"partition\":"
                            + tp.partition() + ",\"producer_id\":" + p.producerId() + ",\"producer_epoch\":"
                            + p.producerEpoch() + ",\"last_sequence\":" + p.lastSequence() + ",\"last_timestamp\":"
                            + p.lastTimestamp() + ",\"coordinator_epoch\":" + p.coordinatorEpoch().orElse(-1)
                            + ",\"current_txn_start_offset\":" + p.currentTransactionStartOffset().orElse(-1) + "}");
                    }
                }
                Collection<TransactionListing> listed = admin.listTransactions().all().get();
                List<String> ids = new ArrayList<>();
                for (TransactionListing t : listed) ids.add(t.transactionalId());
                Map<String, TransactionDescription> desc = ids.isEmpty() ? Collections.emptyMap()
                    : admin.describeTransactions(ids).all().get();
                for (TransactionListing t : listed) {
                    TransactionDescription d = desc.get(t.transactionalId());
                    StringBuilder parts = new StringBuilder("[");
                    if (d != null) for (TopicPartition tp : d.topicPartitions()) {
                        if (parts.length() > 1) parts.append(',');
                        parts.append("[").append(q(tp.topic())).append(',').append(tp.partition()).append(']');
                    }
                    System.out.println("{\"type\":\"transaction\",\"transactional_id\":" + q(t.transactionalId())
                        + ",\"producer_id\":" + t.producerId() + ",\"state\":" + q(t.state().toString())
                        + ",\"partitions\":" + parts + "]}");
                }
            } catch (NoSuchMethodError | NoClassDefFoundError e) {
                System.out.println("{\"type\":\"unsupported\",\"what\":\"DescribeProducers/ListTransactions\"}");
            }
        }
    }
}

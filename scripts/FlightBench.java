// The Java Flight client alone, as the data source uses it (the plugin
// jar's relocated Flight, gRPC and Netty; Spark's Arrow): N files sent as
// one DoExchange of 64-row batches, 4 in flight, to a running sidecar.
// Prints images/s and this JVM's CPU-seconds per image (docs/datasource.md).
//
//   java -cp spark-plugin/target/pixelflight-spark-plugin.jar:$SPARK_JARS/'*' \
//     scripts/FlightBench.java SOCKET OP DIR [ROUNDS]

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.List;
import java.util.stream.Stream;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.pixelflight.shaded.io.grpc.ManagedChannel;
import org.pixelflight.shaded.io.grpc.netty.NettyChannelBuilder;
import org.pixelflight.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import org.pixelflight.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import org.pixelflight.shaded.io.netty.channel.unix.DomainSocketAddress;
import org.pixelflight.shaded.org.apache.arrow.flight.FlightClient;
import org.pixelflight.shaded.org.apache.arrow.flight.FlightDescriptor;
import org.pixelflight.shaded.org.apache.arrow.flight.FlightGrpcUtils;
import org.pixelflight.shaded.org.apache.arrow.flight.FlightStream;

public class FlightBench {
  public static void main(String[] args) throws Exception {
    String socket = args[0];
    String op = args[1];
    List<Path> files;
    try (Stream<Path> s = Files.list(Path.of(args[2]))) {
      files = s.sorted().toList();
    }
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    byte[][] content = new byte[files.size()][];
    for (int i = 0; i < content.length; i++) {
      content[i] = Files.readAllBytes(files.get(i));
    }
    var bean = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    try (var alloc = new RootAllocator()) {
      EpollEventLoopGroup loop = new EpollEventLoopGroup(1);
      ManagedChannel ch = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket)).eventLoopGroup(loop)
          .channelType(EpollDomainSocketChannel.class).usePlaintext().overrideAuthority("localhost").build();
      FlightClient client = FlightGrpcUtils.createFlightClient(alloc, ch);
      FlightDescriptor desc = FlightDescriptor.command(
          ("{\"op\":\"" + op + "\",\"column\":\"content\",\"params\":{},\"strict\":false}").getBytes(StandardCharsets.UTF_8));
      for (int r = 0; r <= rounds; r++) { // round 0 warms up
        long cpu0 = bean.getProcessCpuTime();
        long t0 = System.nanoTime();
        int got = 0;
        var ex = client.doExchange(desc);
        VarBinaryVector v = new VarBinaryVector("content", alloc);
        VectorSchemaRoot root = new VectorSchemaRoot(List.of(v));
        ex.getWriter().start(root);
        FlightStream reader = ex.getReader();
        ArrayDeque<Integer> inFlight = new ArrayDeque<>();
        int next = 0;
        while (next < content.length || !inFlight.isEmpty()) {
          while (next < content.length && inFlight.size() < 4) {
            int n = Math.min(64, content.length - next);
            v.allocateNew(n);
            for (int i = 0; i < n; i++) {
              v.setSafe(i, content[next + i]);
            }
            root.setRowCount(n);
            ex.getWriter().putNext();
            v.clear();
            inFlight.add(n);
            next += n;
            if (next == content.length) {
              ex.getWriter().completed();
            }
          }
          if (!reader.next()) {
            throw new IllegalStateException("stream ended early");
          }
          got += reader.getRoot().getRowCount();
          inFlight.remove();
        }
        ex.close();
        root.close();
        double s = (System.nanoTime() - t0) / 1e9;
        double cpu = (bean.getProcessCpuTime() - cpu0) / 1e9;
        if (r > 0) {
          System.out.printf("%s: %d images in %.2f s: %.1f images/s, %.3f ms client CPU/image%n", op, got, s,
              got / s, cpu / got * 1e3);
        }
      }
      client.close();
      ch.shutdownNow();
      loop.shutdownGracefully();
    }
  }
}

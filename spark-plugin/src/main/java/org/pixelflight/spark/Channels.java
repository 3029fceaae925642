package org.pixelflight.spark;

import java.util.HashMap;
import java.util.Map;

// Bundled and relocated under org.pixelflight.shaded by the shade plugin.
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The gRPC channels to sidecars on Unix sockets, one per socket, shared by
 * every task of the executor's JVM, on one event loop thread (a daemon):
 * a channel and event loop set up per task cost more JVM CPU than the
 * task's files. A task whose sidecar became unavailable replaces the
 * channel it used (a failed channel waits out its reconnect backoff, which
 * could keep a restarted sidecar waiting for seconds); tasks that used the
 * same one then get the new one.
 *
 * <p>FlightClient.Builder casts the epoll channel to a server channel
 * (apache/arrow-java#1039, fixed after Arrow 18.3), so the channels are
 * built here.
 */
final class Channels {
  private static final Map<String, ManagedChannel> OPEN = new HashMap<>();
  private static EventLoopGroup loop;

  private Channels() {}

  /** The shared channel to the socket at path. */
  static synchronized ManagedChannel get(String path) {
    ManagedChannel c = OPEN.get(path);
    if (c == null) {
      if (loop == null) {
        loop = new EpollEventLoopGroup(1, new DefaultThreadFactory("pixelflight-flight", true));
      }
      c = NettyChannelBuilder.forAddress(new DomainSocketAddress(path)).eventLoopGroup(loop)
          .channelType(EpollDomainSocketChannel.class).usePlaintext().overrideAuthority("localhost")
          .maxInboundMessageSize(Integer.MAX_VALUE).build();
      OPEN.put(path, c);
    }
    return c;
  }

  /** A new channel to path in place of failed, unless another task replaced it already. */
  static synchronized ManagedChannel replace(String path, ManagedChannel failed) {
    if (OPEN.get(path) == failed) {
      OPEN.remove(path);
      failed.shutdownNow();
    }
    return get(path);
  }
}

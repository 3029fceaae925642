package org.pixelflight.spark;

import java.util.Map;

// Bundled and relocated under org.pixelflight.shaded by the shade plugin.
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import com.google.rpc.Status;
import org.apache.arrow.flight.ErrorFlightMetadata;
import org.apache.arrow.flight.FlightRuntimeException;

/**
 * What the sidecar says a failed call's status means, beside the message
 * people read: a google.rpc.ErrorInfo of domain "pixelflight" in the
 * status's details, gRPC's grpc-status-details-bin trailer, which Arrow's
 * FlightRuntimeException keeps in its status's metadata (docs/protocol.md,
 * Status codes).
 */
final class StatusDetail {
  static final String TRAILER = "grpc-status-details-bin";
  static final String DOMAIN = "pixelflight";
  /** A row failed in strict mode: "row" (of the batch sent, from 0) and "message". */
  static final String STRICT_ROW = "STRICT_ROW";

  private StatusDetail() {}

  /** The metadata of the sidecar's ErrorInfo of reason in e's status, or null when it has none. */
  static Map<String, String> of(FlightRuntimeException e, String reason) {
    ErrorFlightMetadata trailers = e.status().metadata();
    if (trailers == null || !trailers.containsKey(TRAILER)) {
      return null;
    }
    for (byte[] bytes : trailers.getAllByte(TRAILER)) {
      try {
        for (Any detail : Status.parseFrom(bytes).getDetailsList()) {
          if (detail.is(ErrorInfo.class)) {
            ErrorInfo info = detail.unpack(ErrorInfo.class);
            if (DOMAIN.equals(info.getDomain()) && reason.equals(info.getReason())) {
              return info.getMetadataMap();
            }
          }
        }
      } catch (InvalidProtocolBufferException notOne) {
        // not a google.rpc.Status: no detail of ours
      }
    }
    return null;
  }
}

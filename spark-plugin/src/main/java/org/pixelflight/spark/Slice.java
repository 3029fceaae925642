package org.pixelflight.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.util.TransferPair;

/**
 * One batch of files on its way to the sidecar: their bytes (null for a
 * file that could not be read) and their path, modificationTime and length
 * columns. A file that could not be read has its reason in {@link #errors}.
 */
final class Slice implements AutoCloseable {
  final VarBinaryVector content;
  final VarCharVector path;
  final TimeStampMicroTZVector mtime;
  final BigIntVector length;
  final String[] errors; // null when every file was read
  final int rows;

  Slice(BufferAllocator alloc, FilePart part, int from, byte[][] bytes, String[] errors) {
    rows = bytes.length;
    this.errors = errors;
    content = new VarBinaryVector("content", alloc);
    path = new VarCharVector("path", alloc);
    mtime = new TimeStampMicroTZVector("modificationTime", alloc, "UTC");
    length = new BigIntVector("length", alloc);
    content.allocateNew(rows);
    path.allocateNew(rows);
    mtime.allocateNew(rows);
    length.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      if (bytes[i] == null) {
        content.setNull(i);
      } else {
        content.setSafe(i, bytes[i]);
      }
      path.setSafe(i, part.paths[from + i].getBytes(StandardCharsets.UTF_8));
      mtime.set(i, part.mtimes[from + i] * 1000);
      length.set(i, part.lengths[from + i]);
    }
    content.setValueCount(rows);
    path.setValueCount(rows);
    mtime.setValueCount(rows);
    length.setValueCount(rows);
  }

  private Slice(VarBinaryVector content, VarCharVector path, TimeStampMicroTZVector mtime, BigIntVector length,
      String[] errors, int rows) {
    this.content = content;
    this.path = path;
    this.mtime = mtime;
    this.length = length;
    this.errors = errors;
    this.rows = rows;
  }

  /**
   * Rows [from, from + n) of this slice, sharing its buffers (it may be
   * closed first): the files of a sidecar answer that covers part of it.
   */
  Slice part(BufferAllocator alloc, int from, int n) {
    return new Slice(split(content, alloc, from, n), split(path, alloc, from, n), split(mtime, alloc, from, n),
        split(length, alloc, from, n), errors == null ? null : Arrays.copyOfRange(errors, from, from + n), n);
  }

  @SuppressWarnings("unchecked")
  private static <V extends ValueVector> V split(V v, BufferAllocator alloc, int from, int n) {
    TransferPair t = v.getTransferPair(alloc);
    t.splitAndTransfer(from, n);
    return (V) t.getTo();
  }

  @Override
  public void close() {
    content.close();
    path.close();
    mtime.close();
    length.close();
  }
}

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
 * One batch of images on its way to the sidecar: their bytes (null for a
 * file that could not be read) and, for the data source's files, their
 * path, modificationTime and length columns; for the table function's
 * rows, a label each for messages. A file that could not be read has its
 * reason in {@link #errors}.
 */
final class Slice implements AutoCloseable {
  final VarBinaryVector content;
  final VarCharVector path; // these three null for table rows
  final TimeStampMicroTZVector mtime;
  final BigIntVector length;
  private final String[] labels; // table rows: what a message calls each; null for files
  final String[] errors; // null when every file was read
  final int rows;

  Slice(BufferAllocator alloc, FilePart part, int from, byte[][] bytes, String[] errors) {
    rows = bytes.length;
    this.errors = errors;
    labels = null;
    content = content(alloc, bytes);
    path = new VarCharVector("path", alloc);
    mtime = new TimeStampMicroTZVector("modificationTime", alloc, "UTC");
    length = new BigIntVector("length", alloc);
    path.allocateNew(rows);
    mtime.allocateNew(rows);
    length.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      path.setSafe(i, part.paths[from + i].getBytes(StandardCharsets.UTF_8));
      mtime.set(i, part.mtimes[from + i] * 1000);
      length.set(i, part.lengths[from + i]);
    }
    path.setValueCount(rows);
    mtime.setValueCount(rows);
    length.setValueCount(rows);
  }

  /** Table rows: their image bytes (null: no image) and what a message calls each. */
  Slice(BufferAllocator alloc, byte[][] bytes, String[] labels) {
    this(content(alloc, bytes), null, null, null, null, labels, bytes.length);
  }

  private Slice(VarBinaryVector content, VarCharVector path, TimeStampMicroTZVector mtime, BigIntVector length,
      String[] errors, String[] labels, int rows) {
    this.content = content;
    this.path = path;
    this.mtime = mtime;
    this.length = length;
    this.errors = errors;
    this.labels = labels;
    this.rows = rows;
  }

  private static VarBinaryVector content(BufferAllocator alloc, byte[][] bytes) {
    VarBinaryVector v = new VarBinaryVector("content", alloc);
    v.allocateNew(bytes.length);
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] == null) {
        v.setNull(i);
      } else {
        v.setSafe(i, bytes[i]);
      }
    }
    v.setValueCount(bytes.length);
    return v;
  }

  /** What a message calls row i: the file's path, or the table row's label. */
  String label(int i) {
    return path != null ? new String(path.get(i), StandardCharsets.UTF_8) : labels[i];
  }

  /**
   * Rows [from, from + n) of this slice, sharing its buffers (it may be
   * closed first): the files of a sidecar answer that covers part of it.
   */
  Slice part(BufferAllocator alloc, int from, int n) {
    return new Slice(split(content, alloc, from, n), split(path, alloc, from, n), split(mtime, alloc, from, n),
        split(length, alloc, from, n), errors == null ? null : Arrays.copyOfRange(errors, from, from + n),
        labels == null ? null : Arrays.copyOfRange(labels, from, from + n), n);
  }

  @SuppressWarnings("unchecked")
  private static <V extends ValueVector> V split(V v, BufferAllocator alloc, int from, int n) {
    if (v == null) {
      return null;
    }
    TransferPair t = v.getTransferPair(alloc);
    t.splitAndTransfer(from, n);
    return (V) t.getTo();
  }

  @Override
  public void close() {
    for (ValueVector v : new ValueVector[] {content, path, mtime, length}) {
      if (v != null) {
        v.close();
      }
    }
  }
}

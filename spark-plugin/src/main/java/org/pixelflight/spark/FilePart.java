package org.pixelflight.spark;

import java.util.List;

import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.connector.read.InputPartition;

/** The files of one task: their paths, modification times (ms) and lengths. */
final class FilePart implements InputPartition {
  private static final long serialVersionUID = 1L;

  final String[] paths;
  final long[] mtimes;
  final long[] lengths;

  FilePart(List<FileStatus> files) {
    int n = files.size();
    paths = new String[n];
    mtimes = new long[n];
    lengths = new long[n];
    for (int i = 0; i < n; i++) {
      FileStatus f = files.get(i);
      paths[i] = f.getPath().toString();
      mtimes[i] = f.getModificationTime();
      lengths[i] = f.getLen();
    }
  }
}

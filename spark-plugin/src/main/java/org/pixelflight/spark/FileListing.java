package org.pixelflight.spark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.GlobFilter;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

/**
 * Lists the files of a read and packs them into partitions, as the
 * binaryFile source does:
 *
 * <ul>
 * <li>each path is a file, a directory or a glob; a directory gives the files
 *   in it, and with recursiveFileLookup also those in its subdirectories
 *   (without it, subdirectories are skipped: there is no partition-column
 *   discovery);
 * <li>hidden files are never read, whether listed, matched by a glob or given
 *   by their path: names starting with "." or ending in "._COPYING_" (a copy
 *   in progress), and names starting with "_" without an "=" (_SUCCESS,
 *   _metadata); below a directory, hidden subdirectories are not listed
 *   (by the same rule, except that _metadata and _common_metadata
 *   directories are), while a directory given by its path or matched by a
 *   glob is listed whatever its name. This is Spark's rule for its file
 *   sources (HadoopFSUtils.shouldFilterOutPathName for what a listing
 *   keeps, PartitioningAwareFileIndex.isDataPath for the files read);
 * <li>pathGlobFilter is a glob over file names; modifiedBefore and
 *   modifiedAfter (yyyy-MM-ddTHH:mm:ss, in spark.sql.session.timeZone) keep
 *   files modified strictly before or after;
 * <li>files are not split; partitions are packed by bytes like Spark's file
 *   sources: each file costs its length plus an open cost, and a partition
 *   holds up to min(spark.sql.files.maxPartitionBytes, max(open cost, total
 *   cost / default parallelism)). The open cost is
 *   spark.sql.files.openCostInBytes where the session sets it, else
 *   OPEN_COST, not Spark's 4 MB.
 * </ul>
 */
final class FileListing {
  /**
   * A file's cost in bytes beyond its length, where the session does not
   * set spark.sql.files.openCostInBytes. Spark's 4 MB default prices a
   * byte-bound scan, where opening a file is the expensive part: it packs
   * 44 KB images 31 to a task, and each Spark task costs some 10 ms of
   * its own, while an image costs its sidecar milliseconds whatever its
   * bytes. At 64 KB a task holds up to some 1,200 such images, and there
   * is still at least one task per core (BENCHMARKS.md, "The data source").
   */
  static final long OPEN_COST = 64 << 10;

  private FileListing() {}

  static List<FilePart> partitions(ReadOptions opts, Configuration conf, SparkSession spark) throws IOException {
    String zone = spark.conf().get("spark.sql.session.timeZone", ZoneId.systemDefault().getId());
    long before = instant(opts.modifiedBefore, "modifiedBefore", zone, Long.MAX_VALUE);
    long after = instant(opts.modifiedAfter, "modifiedAfter", zone, Long.MIN_VALUE);
    GlobFilter names = opts.pathGlobFilter == null ? null : new GlobFilter(opts.pathGlobFilter);
    List<FileStatus> files = new ArrayList<>();
    for (String p : opts.paths) {
      Path path = new Path(p);
      FileSystem fs = path.getFileSystem(conf);
      FileStatus[] found = fs.globStatus(path);
      if (found == null || found.length == 0 && !hasGlob(p)) {
        throw new FileNotFoundException("pixelflight: path does not exist: " + p);
      }
      for (FileStatus st : found) {
        if (st.isDirectory()) {
          list(fs, st.getPath(), opts.recursive, files);
        } else if (!hiddenFile(st.getPath().getName())) {
          files.add(st);
        }
      }
    }
    files.removeIf(f -> (names != null && !names.accept(f.getPath()))
        || f.getModificationTime() >= before || f.getModificationTime() <= after);
    long openCost = bytes(spark.conf().get("spark.sql.files.openCostInBytes", Long.toString(OPEN_COST)));
    long maxBytes = bytes(spark.conf().get("spark.sql.files.maxPartitionBytes", "128m"));
    int parallelism = spark.sparkContext().defaultParallelism();
    long total = 0;
    for (FileStatus f : files) {
      total += f.getLen() + openCost;
    }
    long split = Math.min(maxBytes, Math.max(openCost, total / Math.max(1, parallelism)));
    files.sort(Comparator.comparingLong(FileStatus::getLen).reversed());
    List<FilePart> parts = new ArrayList<>();
    List<FileStatus> current = new ArrayList<>();
    long size = 0;
    for (FileStatus f : files) {
      if (!current.isEmpty() && size + f.getLen() > split) {
        parts.add(new FilePart(current));
        current = new ArrayList<>();
        size = 0;
      }
      current.add(f);
      size += f.getLen() + openCost;
    }
    if (!current.isEmpty()) {
      parts.add(new FilePart(current));
    }
    return parts;
  }

  /**
   * The files in dir (and with recursive, below it) that are not hidden.
   * listStatus, not listFiles: listFiles makes a LocatedFileStatus of each
   * file, which asks for its owner and permissions, and Hadoop's local file
   * system, without its native library (as pip's pyspark ships it), forks
   * `ls -ld` for each file.
   */
  private static void list(FileSystem fs, Path dir, boolean recursive, List<FileStatus> out)
      throws IOException {
    for (FileStatus f : fs.listStatus(dir)) {
      String name = f.getPath().getName();
      if (!f.isDirectory()) {
        if (!hiddenFile(name)) {
          out.add(f);
        }
      } else if (recursive && !hiddenDirectory(name)) { // nothing below a hidden directory is read
        list(fs, f.getPath(), true, out);
      }
    }
  }

  /**
   * Whether a file is hidden, wherever it was found: Spark's file sources
   * drop it while listing (HadoopFSUtils.shouldFilterOutPathName, which also
   * drops a file given by its path) or before reading (isDataPath, which
   * drops the _metadata and _common_metadata that the listing keeps).
   */
  static boolean hiddenFile(String name) {
    return name.startsWith(".") || name.endsWith("._COPYING_") || name.startsWith("_") && !name.contains("=");
  }

  /** Whether a subdirectory is not listed: HadoopFSUtils.shouldFilterOutPathName. */
  static boolean hiddenDirectory(String name) {
    boolean exclude = name.startsWith("_") && !name.contains("=") || name.startsWith(".")
        || name.endsWith("._COPYING_");
    return exclude && !name.startsWith("_common_metadata") && !name.startsWith("_metadata");
  }

  /** A size as Spark writes it: 4194304, 4194304b, 4m, 4MB, 1g. */
  static long bytes(String s) {
    String v = s.trim().toLowerCase(java.util.Locale.ROOT);
    String[] units = {"b", "k", "m", "g", "t"};
    int i = v.length();
    while (i > 0 && Character.isLetter(v.charAt(i - 1))) {
      i--;
    }
    String unit = v.substring(i).replace("b", "");
    int shift = unit.isEmpty() ? 0 : 10 * List.of(units).indexOf(unit);
    if (shift < 0) {
      throw new IllegalArgumentException("pixelflight: not a size: " + s);
    }
    return Long.parseLong(v.substring(0, i).trim()) << shift;
  }

  private static boolean hasGlob(String p) {
    return p.chars().anyMatch(c -> "*?[{".indexOf(c) >= 0);
  }

  private static long instant(String value, String option, String zone, long dflt) {
    if (value == null) {
      return dflt;
    }
    try {
      return LocalDateTime.parse(value).atZone(ZoneId.of(zone)).toInstant().toEpochMilli();
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("pixelflight: " + option + " '" + value
          + "': want a time as yyyy-MM-ddTHH:mm:ss", e);
    }
  }
}

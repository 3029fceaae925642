package org.pixelflight.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of a pixelflight read: the exchange's ({@link ExchangeOptions})
 * and which files. See {@link ImageDataSource} for the list.
 */
final class ReadOptions extends ExchangeOptions {
  private static final long serialVersionUID = 1L;

  final List<String> paths;
  final long maxFileBytes;
  final String pathGlobFilter;
  final boolean recursive;
  final String modifiedBefore;
  final String modifiedAfter;
  final Map<String, String> all; // every option, for fs.* Hadoop settings

  ReadOptions(CaseInsensitiveStringMap o) {
    super(check(o));
    paths = paths(o);
    maxFileBytes = positive(o, "maxFileBytes", 128L << 20);
    pathGlobFilter = o.get("pathGlobFilter");
    recursive = o.getBoolean("recursiveFileLookup", false);
    modifiedBefore = o.get("modifiedBefore");
    modifiedAfter = o.get("modifiedAfter");
    all = Map.copyOf(o.asCaseSensitiveMap());
  }

  /** o, once it names a path: no path is the first thing to say. */
  private static CaseInsensitiveStringMap check(CaseInsensitiveStringMap o) {
    paths(o);
    return o;
  }

  private static List<String> paths(CaseInsensitiveStringMap o) {
    List<String> out = new ArrayList<>();
    if (o.containsKey("path")) {
      out.add(o.get("path"));
    }
    if (o.containsKey("paths")) { // DataFrameReader.load(p1, p2, ...) passes a JSON array
      try {
        for (JsonNode n : JSON.readTree(o.get("paths"))) {
          out.add(n.asText());
        }
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException("pixelflight: the option paths is not a JSON array", e);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException("pixelflight: no path: load(path) or the option path");
    }
    return out;
  }

  /** path, modificationTime, length, the op's result columns, error. */
  StructType schema() {
    StructType s = new StructType(new StructField[] {
        DataTypes.createStructField("path", DataTypes.StringType, false),
        DataTypes.createStructField("modificationTime", DataTypes.TimestampType, false),
        DataTypes.createStructField("length", DataTypes.LongType, false)});
    for (StructField f : resultSchema().fields()) {
      s = s.add(f);
    }
    return s;
  }
}

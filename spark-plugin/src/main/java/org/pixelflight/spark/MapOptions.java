package org.pixelflight.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of a {@code pixelflight_map} call ({@link MapFunction}): the
 * exchange's ({@link ExchangeOptions}), the image column and the kept
 * columns, resolved against the input's schema on the driver as Spark
 * resolves names (spark.sql.caseSensitive).
 */
final class MapOptions extends ExchangeOptions {
  private static final long serialVersionUID = 1L;
  /** The options a call may give, besides op and params. */
  static final Set<String> KNOWN = new TreeSet<>(List.of(
      "column", "keep", "strict", "endpoint", "window", "maxRows", "maxBatchBytes", "retrySeconds"));

  final int image; // the image column's index in the input
  final int[] keep; // the kept columns' indexes, in order
  final int label; // the index of a string column named path, for messages; -1: none
  final StructType output; // kept columns, then the op's results, error last

  MapOptions(CaseInsensitiveStringMap o, StructType input, boolean caseSensitive) {
    super(o);
    for (String k : o.keySet()) {
      if (!k.equals("op") && !k.equals("params") && KNOWN.stream().noneMatch(k::equalsIgnoreCase)) {
        String near = ParamCheck.closest(k, List.copyOf(KNOWN));
        throw new IllegalArgumentException("pixelflight_map: unknown option '" + k + "'"
            + (near == null ? "" : " (did you mean '" + near + "'?)") + ": want " + String.join(", ", KNOWN));
      }
    }
    String[] names = input.fieldNames();
    String col = o.getOrDefault("column", "content");
    image = index(names, col, caseSensitive);
    DataType t = input.fields()[image].dataType();
    if (!(t instanceof BinaryType)) {
      throw new IllegalArgumentException("pixelflight_map: column " + names[image] + " is " + t.simpleString()
          + ": want binary image bytes (the binaryFile source's content column)");
    }
    List<Integer> kept = new ArrayList<>();
    if (o.containsKey("keep")) {
      for (String k : keepNames(o.get("keep"))) {
        int i = index(names, k, caseSensitive);
        if (kept.contains(i)) {
          throw new IllegalArgumentException("pixelflight_map: keep names the column " + names[i] + " more than once");
        }
        kept.add(i);
      }
    } else {
      for (int i = 0; i < names.length; i++) {
        if (i != image) {
          kept.add(i);
        }
      }
    }
    keep = kept.stream().mapToInt(Integer::intValue).toArray();
    StructType res = resultSchema();
    List<StructField> out = new ArrayList<>();
    for (int i : keep) {
      for (String r : res.fieldNames()) {
        if (caseSensitive ? r.equals(names[i]) : r.equalsIgnoreCase(names[i])) {
          throw new IllegalArgumentException("pixelflight_map: the kept column " + names[i] + " clashes with " + op
              + "'s result columns " + Arrays.toString(res.fieldNames()) + ": name the columns to keep with the "
              + "option keep, or rename it");
        }
      }
      out.add(DataTypes.createStructField(names[i], nullable(input.fields()[i].dataType()), true));
    }
    for (StructField f : res.fields()) {
      out.add(DataTypes.createStructField(f.name(), nullable(f.dataType()), true));
    }
    output = new StructType(out.toArray(new StructField[0]));
    int l = -1;
    for (int i = 0; i < names.length; i++) {
      if (names[i].equalsIgnoreCase("path") && input.fields()[i].dataType() instanceof StringType) {
        l = i;
      }
    }
    label = l;
  }

  /** The options with op and params, for the parser the data source uses too. */
  static CaseInsensitiveStringMap of(String op, String params, Map<String, String> options) {
    Map<String, String> all = new HashMap<>(options);
    all.put("op", op);
    all.put("params", params);
    return new CaseInsensitiveStringMap(all);
  }

  /** keep: a column name, or a JSON array of names. */
  private static List<String> keepNames(String v) {
    if (!v.strip().startsWith("[")) {
      return List.of(v);
    }
    List<String> out = new ArrayList<>();
    try {
      for (JsonNode n : JSON.readTree(v)) {
        if (!n.isTextual()) {
          throw new IllegalArgumentException("pixelflight_map: keep's JSON array must hold column names, not " + n);
        }
        out.add(n.asText());
      }
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("pixelflight_map: keep is not a JSON array of names: " + v, e);
    }
    return out;
  }

  /** The input's index of a column, matched as Spark matches names. */
  private static int index(String[] names, String name, boolean caseSensitive) {
    int found = -1;
    for (int i = 0; i < names.length; i++) {
      if (caseSensitive ? names[i].equals(name) : names[i].equalsIgnoreCase(name)) {
        if (found >= 0) {
          throw new IllegalArgumentException("pixelflight_map: column " + name + " is ambiguous in the input: it has "
              + names[found] + " and " + names[i] + (caseSensitive ? "" : " (spark.sql.caseSensitive is false)"));
        }
        found = i;
      }
    }
    if (found < 0) {
      throw new IllegalArgumentException("pixelflight_map: the input has no column " + name + " (columns: "
          + String.join(", ", names) + ")");
    }
    return found;
  }

  /** t with every field, element and value nullable, as map_images declares its columns. */
  static DataType nullable(DataType t) {
    if (t instanceof StructType s) {
      List<StructField> f = new ArrayList<>();
      for (StructField x : s.fields()) {
        f.add(DataTypes.createStructField(x.name(), nullable(x.dataType()), true));
      }
      return DataTypes.createStructType(f);
    }
    if (t instanceof ArrayType a) {
      return DataTypes.createArrayType(nullable(a.elementType()), true);
    }
    if (t instanceof MapType m) {
      return DataTypes.createMapType(nullable(m.keyType()), nullable(m.valueType()), true);
    }
    return t;
  }
}

package org.pixelflight.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * An op's params checked on the driver, before any task runs, by the rules
 * and in the words of the Python client's {@code pixelflight.params.check_params}
 * (which {@code map_images} and {@code read_images} use): names (with the
 * nearest known one), types, choices and ranges from params.json (the
 * sidecar's own list, generated from its registry, packed into the jar
 * from python/pixelflight/), and the rules joining two params. The bounds
 * that a flag of the executors' sidecars sets (sizes up to --max-kernel)
 * and the cascade names they have (Debian's opencv-data's, unless
 * --cascade-dir adds more) are checked when the executor plugin's sidecars
 * serve the tasks, whose flags the session's conf gives
 * ({@link #pluginLimits}, params.py's plugin_limits); else the tasks check
 * them.
 * tests/test_datasource.py holds the two to the same messages.
 */
public final class ParamCheck {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ParamCheck() {}

  /** params.json, read on first use. */
  private static final class Schema {
    static final JsonNode OPS = load();

    private static JsonNode load() {
      try (InputStream in = ParamCheck.class.getResourceAsStream("params.json")) {
        if (in == null) {
          throw new IllegalStateException("pixelflight: params.json is not in the plugin jar (build it with make plugin)");
        }
        return JSON.readTree(in);
      } catch (IOException e) {
        throw new UncheckedIOException("pixelflight: reading params.json from the plugin jar", e);
      }
    }
  }

  /**
   * What is wrong with op's params (a JSON object) in check_params' words,
   * or null: for tests, which compare it with the Python client's.
   * limits: a JSON object {flag: value} as pluginLimits gives it, or null.
   */
  public static String problem(String op, String params, String limits) throws IOException {
    Map<String, Double> lim = null;
    if (limits != null) {
      lim = new java.util.HashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = JSON.readTree(limits).fields(); it.hasNext();) {
        Map.Entry<String, JsonNode> e = it.next();
        lim.put(e.getKey(), e.getValue().asDouble());
      }
    }
    try {
      check(op, JSON.readTree(params), lim);
      return null;
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  /** pluginLimits of a conf given as a JSON object, as JSON (null: none): for tests. */
  public static String limitsOf(String conf) throws IOException {
    JsonNode c = JSON.readTree(conf);
    Map<String, Double> lim = pluginLimits(k -> c.has(k) ? c.get(k).asText() : null);
    return lim == null ? null : JSON.writeValueAsString(new java.util.TreeMap<>(lim));
  }

  /**
   * The flags of the executors' sidecars that bound params, {flag: value},
   * when the executor plugin's sidecars serve the tasks: from
   * spark.pixelflight.args, else spark.executorEnv.PIXELFLIGHT_FLAG; absent
   * ones at serve's defaults (not in the map). null when the tasks use no
   * plugin's sidecar (no plugin, or spark.executorEnv.PIXELFLIGHT_ENDPOINT
   * set). conf: a Spark conf's value by key, or null.
   */
  static Map<String, Double> pluginLimits(java.util.function.Function<String, String> conf) {
    String plugins = or(conf.apply("spark.plugins")) + "," + or(conf.apply("spark.plugins.defaultList"));
    boolean loaded = false;
    for (String p : plugins.split(",")) {
      loaded |= p.trim().equals(PixelflightPlugin.class.getName());
    }
    if (!loaded || !or(conf.apply("spark.executorEnv.PIXELFLIGHT_ENDPOINT")).isEmpty()) {
      return null;
    }
    String joined = or(conf.apply("spark.pixelflight.args")).trim();
    String[] args = joined.isEmpty() ? new String[0] : joined.split("\\s+");
    java.util.Set<String> flags = new java.util.TreeSet<>();
    Schema.OPS.forEach(ps -> ps.forEach(p -> {
      for (String side : new String[] {"min", "max"}) {
        if (p.path(side).has("limit")) {
          flags.add(p.get(side).get("limit").asText());
        }
      }
    }));
    java.util.Set<String> named = new java.util.TreeSet<>();
    Schema.OPS.forEach(ps -> ps.forEach(p -> {
      if (p.has("names")) {
        named.add(p.get("names").get("flag").asText());
      }
    }));
    Map<String, Double> limits = new java.util.HashMap<>();
    for (String flag : flags) {
      String v = flagValue(conf, args, flag);
      try {
        if (v != null) {
          limits.put(flag, Double.parseDouble(v));
        }
      } catch (NumberFormatException bad) {
        // the sidecars will not start: the plugin says why
      }
    }
    for (String flag : named) { // a flag that adds names: 1 when set
      if (!or(flagValue(conf, args, flag)).isEmpty()) {
        limits.put(flag, 1.0);
      }
    }
    return limits;
  }

  /** flag's value as serve reads it: the last of args, else its PIXELFLIGHT_ variable; null when neither. */
  private static String flagValue(java.util.function.Function<String, String> conf, String[] args, String flag) {
    String v = conf.apply("spark.executorEnv.PIXELFLIGHT_" + flag.toUpperCase(Locale.ROOT).replace('-', '_'));
    for (int i = 0; i < args.length; i++) { // the last one wins, as in serve
      String a = args[i];
      String name = a.replaceFirst("^-+", "");
      int eq = name.indexOf('=');
      String given = eq < 0 ? null : name.substring(eq + 1);
      name = eq < 0 ? name : name.substring(0, eq);
      if (a.startsWith("-") && name.equals(flag)) {
        v = given != null ? given : i + 1 < args.length ? args[i + 1] : v;
      }
    }
    return v;
  }

  private static String or(String s) {
    return s == null ? "" : s;
  }

  /**
   * Throws IllegalArgumentException, in check_params' words, when op's
   * params are wrong; limits as pluginLimits gives them (null: the bounds
   * set by the sidecars' flags are not known here).
   */
  static void check(String op, JsonNode params, Map<String, Double> limits) {
    JsonNode known = Schema.OPS.get(op);
    if (known == null) {
      List<String> ops = new ArrayList<>();
      Schema.OPS.fieldNames().forEachRemaining(ops::add);
      ops.sort(null);
      throw new IllegalArgumentException("unknown op " + repr(op) + ": want one of " + String.join(", ", ops));
    }
    List<String> names = new ArrayList<>();
    known.forEach(p -> names.add(p.get("name").asText()));
    for (Iterator<Map.Entry<String, JsonNode>> it = params.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> e = it.next();
      String name = e.getKey();
      JsonNode value = e.getValue();
      JsonNode p = null;
      for (JsonNode k : known) {
        if (k.get("name").asText().equals(name)) {
          p = k;
        }
      }
      if (p == null) {
        String near = closest(name, names);
        throw new IllegalArgumentException(op + " has no parameter " + repr(name)
            + (near == null ? "" : " (did you mean " + repr(near) + "?)") + "; "
            + (names.isEmpty() ? "it takes none" : "its parameters: " + String.join(", ", names)));
      }
      if (value.isNull()) {
        continue; // the sidecar's default
      }
      String want = typeWant(p.get("type").asText(), value);
      if (want == null) {
        want = constraint(p, value, limits);
      }
      if (want != null) {
        throw new IllegalArgumentException(op + " parameter " + name + "=" + repr(value) + ": want " + want
            + " (" + p.get("doc").asText() + ")");
      }
    }
    Double side = null; // the sidecars' --max-kernel, where known
    for (JsonNode p : known) {
      JsonNode b = p.get("max");
      if (b != null && "max-kernel".equals(b.path("limit").asText())) {
        JsonNode bb = bound(b, limits);
        side = bb == null ? null : bb.get("value").asDouble();
        break;
      }
    }
    String why = joined(op, params, known, side);
    if (why != null) {
      throw new IllegalArgumentException(op + ": " + why);
    }
  }

  /** What a value of type wants when value is not one, else null (params.py's _TYPES). */
  private static String typeWant(String type, JsonNode v) {
    return switch (type) {
      case "string" -> v.isTextual() ? null : "a string";
      case "float" -> number(v) ? null : "a finite number";
      case "int" -> v.isIntegralNumber() ? null : "a whole number (int)";
      case "bool" -> v.isBoolean() ? null : "True or False";
      case "list of rows of floats" -> matrix(v) ? null : "a list of rows of finite numbers, all rows as long";
      case "[w, h] or int" -> v.isIntegralNumber() || v.isArray() && v.size() == 2
          && v.get(0).isIntegralNumber() && v.get(1).isIntegralNumber() ? null
          : "an int or a [width, height] pair of ints";
      default -> null; // a type this jar does not know: the sidecar checks it
    };
  }

  private static boolean number(JsonNode v) {
    return v.isNumber() && Double.isFinite(v.asDouble());
  }

  private static boolean matrix(JsonNode v) {
    if (!v.isArray() || v.isEmpty()) {
      return false;
    }
    int width = -1;
    for (JsonNode row : v) {
      if (!row.isArray() || row.isEmpty() || width >= 0 && row.size() != width) {
        return false;
      }
      width = row.size();
      for (JsonNode x : row) {
        if (!number(x)) {
          return false;
        }
      }
    }
    return true;
  }

  /** What p wants when value breaks its choices or range, else null (params.py's _constraint, no limits known). */
  private static String constraint(JsonNode p, JsonNode value, Map<String, Double> limits) {
    JsonNode choices = p.get("choices");
    if (choices != null && value.isTextual() && !value.asText().isEmpty()) {
      List<String> c = new ArrayList<>();
      choices.forEach(x -> c.add(x.asText()));
      if (!c.contains(value.asText())) {
        List<String> quoted = new ArrayList<>();
        for (String x : c.subList(0, c.size() - 1)) {
          quoted.add(repr(x));
        }
        String near = closest(value.asText(), c);
        return String.join(", ", quoted) + " or " + repr(c.get(c.size() - 1))
            + (near == null ? "" : " (did you mean " + repr(near) + "?)");
      }
    }
    JsonNode names = p.get("names");
    if (names != null && limits != null && value.isTextual() && !value.asText().isEmpty()
        && limits.getOrDefault(names.get("flag").asText(), 0.0) == 0.0) {
      List<String> known = new ArrayList<>();
      names.get("known").forEach(x -> known.add(x.asText()));
      if (!known.contains(value.asText())) {
        String near = closest(value.asText(), known);
        return "one the sidecars have" + (near == null ? "" : " (did you mean " + repr(near) + "?)") + ": "
            + String.join(", ", known) + " (the executor plugin's sidecars have Debian's opencv-data; --"
            + names.get("flag").asText() + " in spark.pixelflight.args, or spark.executorEnv.PIXELFLIGHT_"
            + names.get("flag").asText().toUpperCase(Locale.ROOT).replace('-', '_') + ", adds yours)";
      }
    }
    JsonNode lo = bound(p.get("min"), limits);
    JsonNode hi = bound(p.get("max"), limits);
    if (lo == null && hi == null) {
      return null;
    }
    List<Double> values = new ArrayList<>();
    if (value.isArray()) {
      value.forEach(x -> values.add(x.asDouble()));
    } else {
      values.add(value.asDouble());
    }
    boolean ok = true;
    for (double v : values) {
      ok &= (lo == null || inside(v, lo, 1)) && (hi == null || inside(v, hi, -1));
    }
    if (ok) {
      return null;
    }
    String each = "[w, h] or int".equals(p.get("type").asText()) ? "each side " : "";
    if (lo != null && hi != null && !lo.path("exclusive").asBoolean() && !hi.path("exclusive").asBoolean()) {
      return each + g(lo.get("value").asDouble()) + " to " + g(hi.get("value").asDouble());
    }
    List<String> words = new ArrayList<>();
    if (lo != null) {
      words.add((lo.path("exclusive").asBoolean() ? "more than " : "at least ") + g(lo.get("value").asDouble()));
    }
    if (hi != null) {
      words.add((hi.path("exclusive").asBoolean() ? "less than " : "at most ") + g(hi.get("value").asDouble()));
    }
    return each + String.join(" and ", words);
  }

  /** b with the value of its flag from limits; null when absent, or when b's flag is not known (limits null). */
  private static JsonNode bound(JsonNode b, Map<String, Double> limits) {
    if (b == null || !b.has("limit")) {
      return b;
    }
    if (limits == null) {
      return null;
    }
    com.fasterxml.jackson.databind.node.ObjectNode copy = b.deepCopy();
    Double v = limits.get(b.get("limit").asText());
    if (v != null) {
      copy.put("value", v);
    }
    return copy;
  }

  private static boolean inside(double v, JsonNode bound, int side) {
    double d = (v - bound.get("value").asDouble()) * side;
    return d > 0 || d == 0 && !bound.path("exclusive").asBoolean();
  }

  /** What breaks a rule joining two given params, in the sidecar's words (params.py's _joined), else null. */
  private static String joined(String op, JsonNode params, JsonNode known, Double maxKernel) {
    Map<String, JsonNode> given = new java.util.HashMap<>();
    params.fields().forEachRemaining(e -> {
      if (!e.getValue().isNull() && !(e.getValue().isTextual() && e.getValue().asText().isEmpty())) {
        given.put(e.getKey(), e.getValue());
      }
    });
    if ("fft_convolve".equals(op)) {
      String kernel = given.containsKey("kernel") ? given.get("kernel").asText()
          : given.containsKey("matrix") ? "matrix" : "gaussian";
      if (given.containsKey("matrix") && !"matrix".equals(kernel)) {
        return "matrix is given, so kernel must be \"matrix\" or omitted, not " + quote(kernel);
      }
      if (given.containsKey("sigma") && !"gaussian".equals(kernel)) {
        return "sigma applies only to kernel gaussian, not " + quote(kernel);
      }
      if (given.containsKey("size") && !"gaussian".equals(kernel) && !"box".equals(kernel)) {
        return "size applies only to kernels gaussian and box, not " + quote(kernel);
      }
      if ("matrix".equals(kernel) && !given.containsKey("matrix")) {
        return "kernel matrix needs a matrix: a non-empty list of non-empty rows";
      }
      String output = given.containsKey("output") ? given.get("output").asText() : "f32";
      if (given.containsKey("png_scale") && !"png".equals(output)) {
        return "png_scale applies only to output png, not " + quote(output);
      }
      if ("gaussian".equals(kernel) && !given.containsKey("size") && maxKernel != null) {
        double sigma = given.containsKey("sigma") ? given.get("sigma").asDouble() : 1.0;
        long size = 2 * (long) Math.ceil(3 * sigma) + 1; // the sidecar's default size
        if (size > maxKernel) {
          return "sigma " + num(sigma) + ": its default size, 2*ceil(3*sigma)+1 = " + size + ", passes "
              + num(maxKernel) + ": give a size (1 to " + num(maxKernel) + ")";
        }
      }
    }
    if ("detect_blobs".equals(op)) {
      double lo = given.containsKey("min_sigma") ? given.get("min_sigma").asDouble() : def(known, "min_sigma");
      double hi = given.containsKey("max_sigma") ? given.get("max_sigma").asDouble() : def(known, "max_sigma");
      if (hi < lo) {
        return "max_sigma below min_sigma (" + num(hi) + " < " + num(lo) + ")";
      }
      if (maxKernel != null && hi > maxKernel) {
        return "max_sigma " + num(hi) + ": want at most " + num(maxKernel) + " (the kernel side limit)";
      }
    }
    return null;
  }

  private static double def(JsonNode known, String name) {
    for (JsonNode p : known) {
      if (p.get("name").asText().equals(name)) {
        return Double.parseDouble(p.get("default").asText());
      }
    }
    throw new IllegalStateException("params.json: no default for " + name);
  }

  /** s as JSON quotes it (json.dumps). */
  private static String quote(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A value as Python's repr writes what json.loads made of it. */
  static String repr(JsonNode v) {
    if (v.isTextual()) {
      return repr(v.asText());
    }
    if (v.isBoolean()) {
      return v.asBoolean() ? "True" : "False";
    }
    if (v.isNull()) {
      return "None";
    }
    if (v.isIntegralNumber()) {
      return v.bigIntegerValue().toString();
    }
    if (v.isNumber()) {
      return pyFloat(v.asDouble());
    }
    if (v.isArray()) {
      List<String> parts = new ArrayList<>();
      v.forEach(x -> parts.add(repr(x)));
      return "[" + String.join(", ", parts) + "]";
    }
    List<String> parts = new ArrayList<>();
    v.fields().forEachRemaining(e -> parts.add(repr(e.getKey()) + ": " + repr(e.getValue())));
    return "{" + String.join(", ", parts) + "}";
  }

  /** A string as Python's repr quotes it (single quotes unless it holds one and no double). */
  static String repr(String s) {
    char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    StringBuilder b = new StringBuilder().append(q);
    for (char c : s.toCharArray()) {
      if (c == q || c == '\\') {
        b.append('\\').append(c);
      } else if (c == '\n') {
        b.append("\\n");
      } else if (c == '\r') {
        b.append("\\r");
      } else if (c == '\t') {
        b.append("\\t");
      } else if (c < 0x20 || c == 0x7f) {
        b.append(String.format("\\x%02x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append(q).toString();
  }

  /** A float as Python's repr writes it: 2.5, 1e-07, 1e+21, inf. */
  static String pyFloat(double v) {
    if (Double.isNaN(v)) {
      return "nan";
    }
    if (Double.isInfinite(v)) {
      return v > 0 ? "inf" : "-inf";
    }
    if (v == 0) {
      return 1 / v < 0 ? "-0.0" : "0.0";
    }
    String s = Double.toString(v); // the shortest digits that round-trip, as Python's repr
    int e = s.indexOf('E');
    String mant = e < 0 ? s : s.substring(0, e);
    int exp = e < 0 ? 0 : Integer.parseInt(s.substring(e + 1));
    // Python writes exponents from 1e-05 down and from 1e+16 up, else plain.
    java.math.BigDecimal d = new java.math.BigDecimal(mant).scaleByPowerOfTen(exp);
    int magnitude = d.precision() - d.scale() - 1;
    if (magnitude < -4 || magnitude >= 16) {
      String digits = d.unscaledValue().abs().toString().replaceAll("0+$", "");
      String m = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
      return (v < 0 ? "-" : "") + m + "e" + (magnitude < 0 ? "-" : "+") + String.format("%02d", Math.abs(magnitude));
    }
    String plain = d.toPlainString();
    return plain.contains(".") ? plain : plain + ".0";
  }

  /** v as Python's %g: 6 significant digits, 1e-06, 1024, 1.01. */
  static String g(double v) {
    if (v == 0) {
      return "0";
    }
    int exp = (int) Math.floor(Math.log10(Math.abs(v)));
    String s = String.format(Locale.ROOT, "%.5e", v); // 6 significant digits
    double rounded = Double.parseDouble(s);
    exp = (int) Math.floor(Math.log10(Math.abs(rounded)));
    if (exp < -4 || exp >= 6) {
      String m = s.substring(0, s.indexOf('e')).replaceAll("\\.?0+$", "");
      return m + "e" + (exp < 0 ? "-" : "+") + String.format("%02d", Math.abs(exp));
    }
    String f = new java.math.BigDecimal(rounded).round(new java.math.MathContext(6)).stripTrailingZeros().toPlainString();
    return f;
  }

  /** A number as the sidecar's Go %v writes it (params.py's _num): 50, 0.1234567. */
  private static String num(double v) {
    String s = pyFloat(v);
    return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
  }

  /**
   * The known name nearest s, as Python's difflib.get_close_matches(s,
   * names, n=1) finds it (ratio of matching characters at least 0.6), or null.
   */
  static String closest(String s, List<String> names) {
    String best = null;
    double most = 0.6;
    for (String n : names) {
      // difflib's SequenceMatcher(a=name, b=word): the blocks found from the name's side.
      double r = 2.0 * matching(n, s) / (s.length() + n.length());
      // Ties go to the greater name, as difflib's heapq.nlargest of (ratio, name).
      if (r > most || r == most && (best == null || n.compareTo(best) > 0)) {
        best = n;
        most = r;
      }
    }
    return best;
  }

  /** The characters of a and b in matching blocks (Ratcliff and Obershelp, as difflib). */
  private static int matching(String a, String b) {
    if (a.isEmpty() || b.isEmpty()) {
      return 0;
    }
    int bestLen = 0, bestA = 0, bestB = 0;
    for (int i = 0; i < a.length(); i++) {
      for (int j = 0; j < b.length(); j++) {
        int k = 0;
        while (i + k < a.length() && j + k < b.length() && a.charAt(i + k) == b.charAt(j + k)) {
          k++;
        }
        if (k > bestLen) {
          bestLen = k;
          bestA = i;
          bestB = j;
        }
      }
    }
    if (bestLen == 0) {
      return 0;
    }
    return bestLen + matching(a.substring(0, bestA), b.substring(0, bestB))
        + matching(a.substring(bestA + bestLen), b.substring(bestB + bestLen));
  }
}

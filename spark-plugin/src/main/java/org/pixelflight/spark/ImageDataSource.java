package org.pixelflight.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code pixelflight} data source: image files in, one row of an op's
 * results per file out, computed by the executors' sidecars with no Python
 * on the executors.
 *
 * <pre>
 * spark.read.format("pixelflight").option("op", "info").load("s3a://bucket/frames/")
 * CREATE TEMPORARY VIEW v USING pixelflight OPTIONS (path '/data', op 'fft_convolve', params '{"output": "stats"}')
 * </pre>
 *
 * <p>Columns: path, modificationTime, length (as the binaryFile source
 * has them), the op's result columns ({@link OpSchema}) and error (null, or
 * why the file has no result). Options:
 *
 * <table>
 * <caption>Options</caption>
 * <tr><td>op</td><td></td><td>the op (required)</td></tr>
 * <tr><td>params</td><td>{}</td><td>the op's parameters, a JSON object</td></tr>
 * <tr><td>strict</td><td>false</td><td>a file without a result fails the task instead of getting an error</td></tr>
 * <tr><td>pathGlobFilter, recursiveFileLookup, modifiedBefore, modifiedAfter</td><td></td><td>which files,
 *   as for binaryFile ({@link FileListing})</td></tr>
 * <tr><td>endpoint</td><td></td><td>the sidecar; default: the executor's PIXELFLIGHT_ENDPOINT, else
 *   spark.executorEnv.PIXELFLIGHT_ENDPOINT, else the executor plugin's ({@link SidecarExchange})</td></tr>
 * <tr><td>maxFileBytes</td><td>128 MiB</td><td>larger files get an error row and are not read</td></tr>
 * <tr><td>window, maxRows, maxBatchBytes</td><td>4, 64, 32 MiB</td><td>batches in flight per task, and the
 *   rows and bytes of one batch</td></tr>
 * <tr><td>retrySeconds</td><td>PIXELFLIGHT_RETRY_SECONDS, else 60</td><td>how long a task waits for a
 *   sidecar that became unavailable; 0: no retries</td></tr>
 * </table>
 */
public final class ImageDataSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "pixelflight";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return new ReadOptions(options).schema();
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new ImageTable(schema);
  }
}

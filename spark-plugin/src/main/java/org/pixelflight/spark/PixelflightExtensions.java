package org.pixelflight.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

import scala.Function1;
import scala.Tuple3;
import scala.runtime.BoxedUnit;

/**
 * pixelflight's Spark SQL extensions: the {@code pixelflight_map} table
 * function ({@link MapFunction}). Enabled with
 * {@code spark.sql.extensions=org.pixelflight.spark.PixelflightExtensions}
 * and the plugin jar in spark.jars (on a Spark Connect server, in its
 * settings).
 */
public final class PixelflightExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public BoxedUnit apply(SparkSessionExtensions ext) {
    ExpressionInfo info = new ExpressionInfo(MapFunction.class.getName(), null, MapFunction.NAME, MapFunction.USAGE,
        "", "", "", "table_funcs", "", "", "java_udf");
    // The builder's argument is scala.collection.Seq on Scala 2.12 (Spark
    // 3.5) and scala.collection.immutable.Seq on 2.13 (Spark 4.x): one
    // source for both, through the raw type.
    Function1<Object, LogicalPlan> builder = args -> MapFunction.build((scala.collection.Seq<Expression>) args);
    ext.injectTableFunction((Tuple3) new Tuple3<>(FunctionIdentifier.apply(MapFunction.NAME), info, builder));
    return BoxedUnit.UNIT;
  }
}

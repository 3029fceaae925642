package org.pixelflight.yarn;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A YARN cluster for tests: one ResourceManager and two NodeManagers in this
 * JVM, on the local file system.
 *
 * <pre>java -cp ... org.pixelflight.yarn.MiniYarn CONF_DIR WORK_DIR</pre>
 *
 * Writes CONF_DIR/yarn-site.xml and core-site.xml (what spark-submit reads
 * through HADOOP_CONF_DIR / YARN_CONF_DIR), prints "ready" and serves until
 * its standard input closes. Each NodeManager offers 8 vcores, 4 GiB and 2
 * yarn.io/gpu, a countable resource with no device behind it (this machine
 * has no GPU; Spark's discovery script decides which addresses an executor
 * sees).
 */
public final class MiniYarn {
  private static final int NODES = 2;

  private MiniYarn() {}

  public static void main(String[] args) throws Exception {
    File confDir = new File(args[0]);
    File work = new File(args[1]);
    Configuration conf = new YarnConfiguration();
    conf.set("yarn.resource-types", "yarn.io/gpu");
    conf.set("yarn.nodemanager.resource-type.yarn.io/gpu", "2");
    conf.set("yarn.scheduler.capacity.resource-calculator",
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.set("yarn.scheduler.capacity.root.default.capacity", "100");
    conf.set("yarn.scheduler.capacity.maximum-am-resource-percent", "1.0");
    conf.setInt(YarnConfiguration.NM_VCORES, 8);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 4096);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // A nearly full disk must not take the NodeManagers out of service.
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    conf.set("yarn.nodemanager.delete.debug-delay-sec", "600");
    conf.set("fs.defaultFS", "file:///");
    conf.set("hadoop.tmp.dir", new File(work, "hadoop-tmp").getAbsolutePath());
    System.setProperty("test.build.data", work.getAbsolutePath());

    MiniYARNCluster cluster = new MiniYARNCluster("pixelflight", NODES, 1, 1);
    cluster.init(conf);
    cluster.start();
    Configuration live = cluster.getConfig();
    confDir.mkdirs();
    try (OutputStream out = new FileOutputStream(new File(confDir, "yarn-site.xml"))) {
      live.writeXml(out);
    }
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", "file:///");
    try (OutputStream out = new FileOutputStream(new File(confDir, "core-site.xml"))) {
      core.writeXml(out);
    }
    System.out.println("ready " + live.get(YarnConfiguration.RM_ADDRESS));
    System.out.flush();
    while (System.in.read() != -1) {
      // serve until the test closes our standard input
    }
    // Each NodeManager's stop kills its containers, then waits for its
    // applications' cleanup (seconds more, and up to 10 s for the deletion
    // of their logs), which the end of this cluster makes moot: stop them
    // side by side, and once no process the containers started is alive
    // (at once, where every application has ended), exit without waiting
    // for the rest.
    List<Thread> stops = new ArrayList<>();
    for (int i = 0; i < NODES; i++) {
      Thread t = new Thread(cluster.getNodeManager(i)::stop);
      t.setDaemon(true);
      t.start();
      stops.add(t);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline && stops.stream().anyMatch(Thread::isAlive)
        && ProcessHandle.current().descendants().anyMatch(ProcessHandle::isAlive)) {
      Thread.sleep(100);
    }
    Runtime.getRuntime().halt(0);
  }
}

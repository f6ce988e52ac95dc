// CuratorCounter.java: Apache Curator's DistributedAtomicLong on an idkeeper tag node,
// for tests/integration/t_zk_counters_cli.sh (compiled at test time against Debian's
// Curator jars, like CuratorHelper.java). A tag node's data begins with max_id as 8
// big-endian bytes, the encoding of DistributedAtomicLong, which reads only those.
//
//   get CONNECT PATH      prints the value
//   add CONNECT PATH N    adds N (optimistic: version-checked setData, retried);
//                         prints "PRE POST", or exits 1 if it did not succeed
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorCounter {
    public static void main(String[] a) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(a[1])
                .sessionTimeoutMs(10000).connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        c.start();
        c.blockUntilConnected();
        DistributedAtomicLong v = new DistributedAtomicLong(c, a[2], new RetryNTimes(100, 10));
        int rc = 0;
        if (a[0].equals("get")) {
            AtomicValue<Long> r = v.get();
            if (r.succeeded()) System.out.println(r.postValue());
            else rc = 1;
        } else if (a[0].equals("add")) {
            AtomicValue<Long> r = v.add(Long.parseLong(a[3]));
            if (r.succeeded()) System.out.println(r.preValue() + " " + r.postValue());
            else rc = 1;
        } else {
            System.err.println("usage: get|add CONNECT PATH [N]");
            rc = 2;
        }
        c.close();
        System.exit(rc);
    }
}

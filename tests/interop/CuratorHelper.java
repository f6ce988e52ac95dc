// CuratorHelper.java: the Java side of the interop tests and benchmarks, on Debian's
// Apache Curator jars (compiled at test time by tests/interop/build.sh). Times are
// System.nanoTime(), which is CLOCK_MONOTONIC on Linux: the clock every helper uses.
//
//   mutex CONNECT PATH ROUNDS OUT HOLD_US START_FILE
//       five unrecorded rounds, creates OUT, waits for START_FILE, then ROUNDS times InterProcessMutex acquire, hold, release;
//       OUT gets "J ENTER_NS EXIT_NS" a line
//   latch CONNECT PATH ID OUT
//       a LeaderLatch; OUT gets "lead NS" / "unlead NS"; stdin: resign, campaign, quit
//   rw-try CONNECT PATH read|write
//       InterProcessReadWriteLock's read or write lock, tried once: prints got or busy
//   rw-hold CONNECT PATH read|write READY STOP
//       takes it, creates READY, holds until STOP exists; prints each change of
//       the connection's state meanwhile as "STATE NS" (SUSPENDED, LOST, ...)
//   bench-mutex CONNECT PATH CLIENTS SECONDS
//       CLIENTS clients (sessions) acquire+release as fast as they can; prints
//       "cycles_per_s N cycles TOTAL handover_us MEDIAN P90" over SECONDS (TOTAL:
//       every cycle, warm-up too; the hand-over: from a hold's end, its release
//       next, to the next hold's start, over the measured window)
//   bench-handover CONNECT PATH N
//       two LeaderLatches; N times the leader closes, time until the other's isLeader;
//       prints "handover_ms median p90"
//   sema CONNECT PATH MAX CLIENTS SECONDS OUT
//       CLIENTS clients (sessions), each an InterProcessSemaphoreV2(PATH, MAX), take a
//       lease, hold it 50 to 250 ms (random) appending "J<pid>.<client>.<round>
//       TIME_US" to OUT every 20 ms (TIME_US: the wall clock, microseconds), give it
//       back, again, until SECONDS have passed; prints "leases N" (tests/tools/holds.py
//       reads OUT)
//   bench-sema CONNECT PATH MAX CLIENTS SECONDS
//       CLIENTS clients acquire() and returnLease() a lease of one semaphore as fast as
//       they can; after a second of warm-up prints "cycles_per_s N cycles TOTAL
//       cycle_us MEDIAN P90", a cycle being one acquire and its release
import java.io.BufferedReader;
import java.io.File;
import java.io.FileWriter;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import java.io.FileOutputStream;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorHelper {
    static CuratorFramework client(String connect) throws Exception {
        int session = Integer.parseInt(System.getenv().getOrDefault("IK_INTEROP_SESSION_MS", "4000"));
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connect)
                .sessionTimeoutMs(session).connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10)).build();
        c.start();
        c.blockUntilConnected();
        return c;
    }

    static void spinUs(long us) throws InterruptedException {
        if (us <= 0) return;
        long end = System.nanoTime() + us * 1000;
        if (us > 200) Thread.sleep(0, 0);
        while (System.nanoTime() < end) { }
    }

    // Unrecorded rounds before OUT exists (the caller's sign that we are ready): they
    // load and warm the lock's classes, or on a busy machine the first recorded
    // acquire takes seconds and the C holders finish without ever meeting us.
    static final int WARMUP = 5;

    static void mutex(String[] a) throws Exception {
        String connect = a[1], path = a[2], out = a[4], start = a[6];
        int rounds = Integer.parseInt(a[3]);
        long hold = Long.parseLong(a[5]);
        CuratorFramework c = client(connect);
        InterProcessMutex m = new InterProcessMutex(c, path);
        for (int i = 0; i < WARMUP; i++) { m.acquire(); m.release(); }
        try (PrintWriter w = new PrintWriter(new FileWriter(out))) {
            while (!new File(start).exists()) Thread.sleep(1);
            for (int i = 0; i < rounds; i++) {
                m.acquire();
                long enter = System.nanoTime();
                spinUs(hold);
                long exit = System.nanoTime();
                m.release();
                w.println("J " + enter + " " + exit);
            }
        }
        c.close();
    }

    static PrintWriter latchOut;
    static boolean leading;

    static synchronized void record(String what) {
        latchOut.println(what + " " + System.nanoTime());
        latchOut.flush();
    }

    static LeaderLatch newLatch(CuratorFramework c, String path, String id) throws Exception {
        LeaderLatch l = new LeaderLatch(c, path, id);
        l.addListener(new LeaderLatchListener() {
            public void isLeader() {
                synchronized (CuratorHelper.class) {
                    if (!leading) { leading = true; record("lead"); }
                }
            }
            public void notLeader() {
                synchronized (CuratorHelper.class) {
                    if (leading) { leading = false; record("unlead"); }
                }
            }
        });
        l.start();
        return l;
    }

    static void latch(String[] a) throws Exception {
        CuratorFramework c = client(a[1]);
        latchOut = new PrintWriter(new FileWriter(a[4], true));
        LeaderLatch l = newLatch(c, a[2], a[3]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("resign")) {
                synchronized (CuratorHelper.class) {
                    if (leading) { leading = false; record("unlead"); }
                }
                if (l != null) l.close();
                l = null;
            } else if (line.startsWith("campaign")) {
                if (l == null) l = newLatch(c, a[2], a[3]);
            } else if (line.startsWith("quit")) {
                break;
            }
        }
        synchronized (CuratorHelper.class) {
            if (leading) { leading = false; record("unlead"); }
        }
        if (l != null) l.close();
        c.close();
    }

    static void benchMutex(String[] a) throws Exception {
        String connect = a[1], path = a[2];
        int n = Integer.parseInt(a[3]);
        double secs = Double.parseDouble(a[4]);
        CuratorFramework[] cs = new CuratorFramework[n];
        for (int i = 0; i < n; i++) cs[i] = client(connect);
        AtomicLong cycles = new AtomicLong();
        long until = System.nanoTime() + (long) (secs * 1e9) + 1000000000L;
        Thread[] t = new Thread[n];
        final int max = 200000; // holds recorded per client: enter, exit
        final long[][] iv = new long[n][2 * max];
        final int[] got = new int[n];
        for (int i = 0; i < n; i++) {
            final InterProcessMutex m = new InterProcessMutex(cs[i], path);
            final int me = i;
            t[i] = new Thread(() -> {
                try {
                    while (System.nanoTime() < until) {
                        m.acquire();
                        long enter = System.nanoTime();
                        if (got[me] < max) {
                            iv[me][2 * got[me]] = enter;
                            iv[me][2 * got[me] + 1] = System.nanoTime();
                            got[me]++;
                        }
                        m.release();
                        cycles.incrementAndGet();
                    }
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            t[i].start();
        }
        Thread.sleep(1000); // warm-up, as the C side does
        long c0 = cycles.get(), t0 = System.nanoTime();
        for (Thread x : t) x.join();
        double el = (System.nanoTime() - t0) / 1e9;
        // the hand-over: from a hold's end (its release next) to the next hold's start
        java.util.ArrayList<long[]> all = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++)
            for (int j = 0; j < got[i]; j++)
                if (iv[i][2 * j] >= t0) all.add(new long[] {iv[i][2 * j], iv[i][2 * j + 1]});
        all.sort((x, y) -> Long.compare(x[0], y[0]));
        long[] gap = new long[Math.max(all.size() - 1, 0)];
        for (int j = 1; j < all.size(); j++) gap[j - 1] = all.get(j)[0] - all.get(j - 1)[1];
        java.util.Arrays.sort(gap);
        int k = gap.length;
        System.out.printf("cycles_per_s %.0f cycles %d handover_us %.0f %.0f%n", (cycles.get() - c0) / el,
                cycles.get(), k > 0 ? gap[k / 2] / 1e3 : 0.0, k > 0 ? gap[k * 9 / 10] / 1e3 : 0.0);
        for (CuratorFramework c : cs) c.close();
    }

    static void benchHandover(String[] a) throws Exception {
        String connect = a[1], path = a[2];
        int n = Integer.parseInt(a[3]);
        CuratorFramework[] cs = {client(connect), client(connect)};
        final long[] leadAt = new long[2];
        final CountDownLatch[] gate = new CountDownLatch[2];
        LeaderLatch[] ls = new LeaderLatch[2];
        for (int k = 0; k < 2; k++) gate[k] = new CountDownLatch(1);
        for (int k = 0; k < 2; k++) ls[k] = handoverLatch(cs[k], path, "j" + k, k, leadAt, gate);
        ls[0].start();
        gate[0].await();
        ls[1].start();
        Thread.sleep(200);
        long[] ns = new long[n];
        int leader = 0;
        for (int k = 0; k < n; k++) {
            int other = 1 - leader;
            gate[other] = new CountDownLatch(1);
            long t0 = System.nanoTime();
            ls[leader].close();
            gate[other].await();
            ns[k] = leadAt[other] - t0;
            gate[leader] = new CountDownLatch(1);
            ls[leader] = handoverLatch(cs[leader], path, "j" + leader, leader, leadAt, gate);
            ls[leader].start();
            Thread.sleep(50);
            leader = other;
        }
        Arrays.sort(ns);
        System.out.printf("handover_ms %.3f %.3f%n", ns[n / 2] / 1e6, ns[n * 9 / 10] / 1e6);
        for (LeaderLatch l : ls) l.close();
        for (CuratorFramework c : cs) c.close();
    }

    static LeaderLatch handoverLatch(CuratorFramework c, String path, String id, int k,
                                     long[] leadAt, CountDownLatch[] gate) {
        LeaderLatch l = new LeaderLatch(c, path, id);
        l.addListener(new LeaderLatchListener() {
            public void isLeader() { leadAt[k] = System.nanoTime(); gate[k].countDown(); }
            public void notLeader() { }
        });
        return l;
    }

    static void rw(String[] a, boolean hold) throws Exception {
        CuratorFramework c = client(a[1]);
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, a[2]);
        InterProcessMutex m = a[3].equals("read") ? rw.readLock() : rw.writeLock();
        if (!hold) {
            boolean got = m.acquire(0, TimeUnit.MILLISECONDS);
            System.out.println(got ? "got" : "busy");
            if (got) m.release();
        } else {
            // Connection states through the hold, on stdout as "STATE NS" (nanoTime is
            // CLOCK_MONOTONIC on Linux, the C helper's clock): a SUSPENDED or LOST
            // holder no longer counts as one (Curator's own rule for its locks).
            c.getConnectionStateListenable().addListener((cl, st) -> {
                System.out.println(st + " " + System.nanoTime());
                System.out.flush();
            });
            m.acquire();
            new File(a[4]).createNewFile();
            while (!new File(a[5]).exists()) Thread.sleep(5);
            m.release();
        }
        c.close();
    }

    static long nowUs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1000000L + t.getNano() / 1000;
    }

    // The real InterProcessSemaphoreV2 (Debian's Curator 5.4.0): acquire() (:210) takes
    // the mutex PATH/locks (:129, :345-353), creates its lease under PATH/leases
    // (:360-361), waits while more than MAX are there (:379-419) and releases the mutex
    // (:435); returnLease (:196) deletes the lease node (:456).
    static void sema(String[] a) throws Exception {
        String connect = a[1], path = a[2];
        int max = Integer.parseInt(a[3]), n = Integer.parseInt(a[4]);
        long until = System.nanoTime() + (long) (Double.parseDouble(a[5]) * 1e9);
        long pid = ProcessHandle.current().pid();
        // O_APPEND: each heartbeat one write(2), whole, whoever else appends
        FileOutputStream out = new FileOutputStream(a[6], true);
        AtomicLong leases = new AtomicLong();
        Thread[] t = new Thread[n];
        for (int i = 0; i < n; i++) {
            final CuratorFramework c = client(connect);
            final InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, path, max);
            final int me = i;
            t[i] = new Thread(() -> {
                try {
                    for (int r = 0; System.nanoTime() < until; r++) {
                        Lease l = s.acquire();
                        String name = "J" + pid + "." + me + "." + r;
                        long hold = 50 + ThreadLocalRandom.current().nextInt(200);
                        long end = System.nanoTime() + hold * 1000000L;
                        do {
                            byte[] line = (name + " " + nowUs() + "\n").getBytes();
                            synchronized (out) { out.write(line); }
                            Thread.sleep(20);
                        } while (System.nanoTime() < end);
                        s.returnLease(l);
                        leases.incrementAndGet();
                    }
                    c.close();
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            t[i].start();
        }
        for (Thread x : t) x.join();
        out.close();
        System.out.println("leases " + leases.get());
    }

    static void benchSema(String[] a) throws Exception {
        String connect = a[1], path = a[2];
        int max = Integer.parseInt(a[3]), n = Integer.parseInt(a[4]);
        double secs = Double.parseDouble(a[5]);
        CuratorFramework[] cs = new CuratorFramework[n];
        for (int i = 0; i < n; i++) cs[i] = client(connect);
        long start = System.nanoTime() + 1000000000L; // a second of warm-up
        long until = start + (long) (secs * 1e9);
        AtomicLong cycles = new AtomicLong();
        final int cap = 200000;
        final long[][] took = new long[n][cap];
        final int[] got = new int[n];
        Thread[] t = new Thread[n];
        for (int i = 0; i < n; i++) {
            final InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(cs[i], path, max);
            final int me = i;
            t[i] = new Thread(() -> {
                try {
                    while (System.nanoTime() < until) {
                        long t0 = System.nanoTime();
                        Lease l = s.acquire();
                        s.returnLease(l);
                        long t1 = System.nanoTime();
                        cycles.incrementAndGet();
                        if (t0 >= start && got[me] < cap) took[me][got[me]++] = t1 - t0;
                    }
                } catch (Exception e) { throw new RuntimeException(e); }
            });
            t[i].start();
        }
        for (Thread x : t) x.join();
        int k = 0;
        for (int i = 0; i < n; i++) k += got[i];
        long[] all = new long[k];
        k = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < got[i]; j++) all[k++] = took[i][j];
        Arrays.sort(all);
        System.out.printf("cycles_per_s %.0f cycles %d cycle_us %.0f %.0f%n", k / secs, cycles.get(),
                k > 0 ? all[k / 2] / 1e3 : 0.0, k > 0 ? all[k * 9 / 10] / 1e3 : 0.0);
        for (CuratorFramework c : cs) c.close();
    }

    public static void main(String[] a) throws Exception {
        switch (a[0]) {
            case "mutex": mutex(a); break;
            case "latch": latch(a); break;
            case "rw-try": rw(a, false); break;
            case "rw-hold": rw(a, true); break;
            case "bench-mutex": benchMutex(a); break;
            case "bench-handover": benchHandover(a); break;
            case "sema": sema(a); break;
            case "bench-sema": benchSema(a); break;
            default: System.err.println("usage: see the top of CuratorHelper.java"); System.exit(2);
        }
        System.exit(0);
    }
}

// ZkSetCversion.java: sets the child counter (cversion) of one node in the data of a
// stopped ZooKeeper server, so that a test can reach the end of the 32-bit sequence
// that ZooKeeper appends to SEQUENTIAL children without creating 2^31 nodes first.
//
//   java -cp ZOOKEEPER_JARS:DIR ZkSetCversion DATA_DIR PATH CVERSION
//
// DATA_DIR is the server's dataDir (the one holding version-2/); the server must be
// stopped (its data is restored with ZooKeeper's own classes, the node's counter set,
// and a new snapshot written on top). A test tool only: nothing of idkeeper uses it.
import java.io.File;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public class ZkSetCversion {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ZkSetCversion DATA_DIR PATH CVERSION");
            System.exit(2);
        }
        File dir = new File(args[0]);
        FileTxnSnapLog snaps = new FileTxnSnapLog(dir, dir);
        DataTree tree = new DataTree();
        ConcurrentHashMap<Long, Integer> sessions = new ConcurrentHashMap<>();
        snaps.restore(tree, sessions, (hdr, txn, digest) -> {});
        DataNode node = tree.getNode(args[1]);
        if (node == null) {
            System.err.println("ZkSetCversion: no node " + args[1]);
            System.exit(1);
        }
        int was = node.stat.getCversion();
        node.stat.setCversion(Integer.parseInt(args[2]));
        snaps.save(tree, sessions, true);
        snaps.close();
        System.out.println("cversion of " + args[1] + ": " + was + " -> " + node.stat.getCversion());
    }
}

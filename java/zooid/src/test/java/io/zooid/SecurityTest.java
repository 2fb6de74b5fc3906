package io.zooid;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * ACLs and security options from Java: a category whose ACL lets only its creator write, the
 * {@link NotAuthorizedException} other identities get (nothing changes), and options that never
 * show a password. TLS and SASL against real servers are tested from Rust and C
 * (tests/security.rs, tests/security_c.rs); here the options are checked to reach the native code.
 */
class SecurityTest {
    @RegisterExtension
    static final SharedZooKeeper zk = new SharedZooKeeper();

    @Test
    void anAclThatLetsOnlyTheCreatorWriteRefusesOthersWithNotAuthorized() throws Exception {
        IDCategory cat = new IDCategory("/java/secure/orders");
        try (IDGeneratorService owner = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().digestAuth("owner", "owner-pw-1"));
                IDGeneratorService mallory = IDGeneratorService.open(
                        zk.connectString(), new IDGeneratorOptions().digestAuth("mallory", "mallory-pw-3"));
                IDGeneratorService anonymous = IDGeneratorService.open(zk.connectString())) {
            owner.createCategory(cat, CategorySpec.of(1, 1000).acl(Arrays.asList(ZooKeeperAcl.creator("cdrwa"), ZooKeeperAcl.worldRead())));
            assertEquals(1, owner.takeIDs(cat, 5).takeID());

            NotAuthorizedException e = assertThrows(NotAuthorizedException.class, () -> mallory.takeIDs(cat, 5));
            assertEquals(ErrorCode.NOT_AUTHORIZED, e.getCode());
            assertEquals("/java/secure/orders", e.getCategory());
            assertTrue(e.getMessage().contains("digest:mallory"), e.getMessage());
            assertFalse(e.getMessage().contains("mallory-pw-3"), e.getMessage());
            NotAuthorizedException anon = assertThrows(NotAuthorizedException.class, () -> anonymous.takeIDs(cat, 5));
            assertTrue(anon.getMessage().contains("anonymous"), anon.getMessage());

            // The world may read; nothing changed.
            assertEquals(995, anonymous.getPoolInfo(cat).countFreeIDs());
            assertEquals(6, owner.takeIDs(cat, 1).takeID());
        }
    }

    @Test
    void badAclsAreRefusedBeforeAnythingIsWritten() throws Exception {
        assertThrows(IllegalArgumentException.class, () -> ZooKeeperAcl.parse("world:anyone"));
        assertThrows(IllegalArgumentException.class, () -> ZooKeeperAcl.sasl("app", "rwx"));
        assertEquals("digest:u:abc=:rw", ZooKeeperAcl.parse("digest:u:abc=:rw").toString());
        IDCategory cat = new IDCategory("/java/secure/bad");
        try (IDGeneratorService svc = IDGeneratorService.open(zk.connectString())) {
            assertThrows(IllegalArgumentException.class, () -> svc.createCategory(cat, CategorySpec.of(1, 10).acl(Collections.<ZooKeeperAcl>emptyList())));
            // The native side checks too: a world entry must name "anyone".
            assertThrows(IllegalArgumentException.class,
                    () -> svc.createCategory(cat, CategorySpec.of(1, 10).acl(Arrays.asList(ZooKeeperAcl.of("world", "someone", "r")))));
            assertThrows(CategoryNotFoundException.class, () -> svc.getPoolInfo(cat));
        }
    }

    @Test
    void optionsNeverShowAPasswordAndReachTheNativeCode() {
        IDGeneratorOptions options = new IDGeneratorOptions()
                .digestAuth("app", "digest-pw-5")
                .saslDigest("alice", "sasl-pw-6")
                .tls(Paths.get("/nonexistent/ca.pem"), Paths.get("/c.pem"), Paths.get("/k.pem"));
        String shown = options.toString();
        assertFalse(shown.contains("digest-pw-5") || shown.contains("sasl-pw-6"), shown);
        assertTrue(shown.contains("alice") && shown.contains("/nonexistent/ca.pem"), shown);

        IllegalArgumentException tls = assertThrows(IllegalArgumentException.class,
                () -> IDGeneratorService.open(zk.connectString(), options));
        assertTrue(tls.getMessage().contains("/nonexistent/ca.pem"), tls.getMessage());
        assertFalse(tls.getMessage().contains("sasl-pw-6"), tls.getMessage());

        IllegalArgumentException kerberos = assertThrows(IllegalArgumentException.class,
                () -> IDGeneratorService.open(zk.connectString(),
                        new IDGeneratorOptions().saslKerberos("app@EXAMPLE.COM", Paths.get("/nonexistent/app.keytab"))));
        assertTrue(kerberos.getMessage().contains("Kerberos"), kerberos.getMessage());
    }
}

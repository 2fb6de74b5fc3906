package io.zooid;

/**
 * The JMX view of an open {@link IDGeneratorService}, registered with the platform MBeanServer
 * as {@code io.zooid:type=IDGeneratorService,name=NAME} while the service is open (NAME: see
 * {@link IDGeneratorOptions#jmxName}). Each attribute reads the live {@link ServiceStats}.
 */
public interface IDGeneratorServiceMXBean {
    /** The connect string the service was opened with. */
    String getConnectString();

    /** See {@link ServiceStats#getTakes()}. */
    long getTakes();

    /** See {@link ServiceStats#getPushes()}. */
    long getPushes();

    /** See {@link ServiceStats#getIDsTaken()}. */
    long getIDsTaken();

    /** See {@link ServiceStats#getIDsPushed()}. */
    long getIDsPushed();

    /** See {@link ServiceStats#getFailedOperations()}. */
    long getFailedOperations();

    /** See {@link ServiceStats#getVersionConflicts()}. */
    long getVersionConflicts();

    /** See {@link ServiceStats#getRetries()}. */
    long getRetries();

    /** See {@link ServiceStats#getLostReplies()}. */
    long getLostReplies();

    /** See {@link ServiceStats#getLostRepliesApplied()}. */
    long getLostRepliesApplied();

    /** See {@link ServiceStats#getLostRepliesNotApplied()}. */
    long getLostRepliesNotApplied();

    /** See {@link ServiceStats#getLostRepliesUnknown()}. */
    long getLostRepliesUnknown();

    /** See {@link ServiceStats#getIDsLeaked()}. */
    long getIDsLeaked();

    /** See {@link ServiceStats#getSessionLosses()}. */
    long getSessionLosses();

    /** See {@link ServiceStats#getSessionGeneration()}. */
    long getSessionGeneration();

    /** See {@link ServiceStats#getLatencyCount()}. */
    long getLatencyCount();

    /** See {@link ServiceStats#getLatencyMaxMicros()}. */
    long getLatencyMaxMicros();

    /** Mean latency of takes and pushes in microseconds (0 before the first). */
    double getLatencyMeanMicros();
}

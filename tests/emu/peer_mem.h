/*
 * peer_mem_begin()/peer_mem_end(): ThreadSanitizer records no access of
 * this thread in between. For tests whose memory another process operates
 * on through the emulated device: the engine thread serving the peer
 * writes it, ordered with this thread by steps over a socket and the
 * peer's process, which ThreadSanitizer cannot see (as a NIC's DMA). Every
 * byte is still checked. No-ops without ThreadSanitizer.
 */
#ifndef GIC_TESTS_PEER_MEM_H
#define GIC_TESTS_PEER_MEM_H

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define XP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define XP_TSAN 1
#endif
#ifdef XP_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define peer_mem_begin()                                          \
	(AnnotateIgnoreReadsBegin(__FILE__, __LINE__),            \
	 AnnotateIgnoreWritesBegin(__FILE__, __LINE__))
#define peer_mem_end()                                            \
	(AnnotateIgnoreWritesEnd(__FILE__, __LINE__),             \
	 AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define peer_mem_begin() ((void)0)
#define peer_mem_end() ((void)0)
#endif

#endif /* GIC_TESTS_PEER_MEM_H */

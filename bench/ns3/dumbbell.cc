// ns-3 baseline for bench/sim: the same dumbbell the lab's simulator runs — N senders and
// N receivers joined through two routers, a bottleneck of RATE with a drop-tail queue of
// one bandwidth-delay product, RTT 40 ms, one bulk TCP CUBIC flow per pair for SECONDS.
// Prints one JSON line: simulated seconds, wall seconds, packets the end hosts sent,
// bytes received.
//
//   dumbbell RATE_BPS FLOWS SECONDS
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <string>

using namespace ns3;

static uint64_t g_host_tx = 0;

static void HostTx(Ptr<const Packet>) { ++g_host_tx; }

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dumbbell RATE_BPS FLOWS SECONDS\n");
    return 2;
  }
  const uint64_t rate = std::stoull(argv[1]);
  const uint32_t flows = std::stoul(argv[2]);
  const double seconds = std::stod(argv[3]);
  const double rtt = 0.040;
  const uint32_t bdp_packets = std::max<uint64_t>(1, rate * rtt / 8 / 1500);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpCubic"));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8 << 20));

  NodeContainer left, right, routers;
  left.Create(flows);
  right.Create(flows);
  routers.Create(2);
  InternetStackHelper stack;
  stack.InstallAll();

  // Access links: 10 x the bottleneck, 1 ms; bottleneck 18 ms: RTT 2 x (1 + 18 + 1) ms.
  PointToPointHelper access;
  access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate * 10)));
  access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(1)));
  PointToPointHelper bottleneck;
  bottleneck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate)));
  bottleneck.SetChannelAttribute("Delay", TimeValue(MilliSeconds(18)));
  bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize",
                      QueueSizeValue(QueueSize(std::to_string(bdp_packets) + "p")));

  Ipv4AddressHelper ip;
  NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
  ip.SetBase("10.0.0.0", "255.255.255.0");
  ip.Assign(core);
  // No queue discipline above the device (Assign installs one): its drop-tail queue is
  // the bottleneck, as in the lab's link model.
  TrafficControlHelper tch;
  tch.Uninstall(core);
  std::vector<Ipv4Address> sinks;
  for (uint32_t i = 0; i < flows; ++i) {
    NetDeviceContainer l = access.Install(left.Get(i), routers.Get(0));
    NetDeviceContainer r = access.Install(routers.Get(1), right.Get(i));
    l.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&HostTx));
    r.Get(1)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&HostTx));
    ip.SetBase(Ipv4Address((10u << 24) | ((1 + 2 * i) << 8)), "255.255.255.0");
    ip.Assign(l);
    ip.SetBase(Ipv4Address((10u << 24) | ((2 + 2 * i) << 8)), "255.255.255.0");
    sinks.push_back(ip.Assign(r).GetAddress(1));
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  ApplicationContainer sinkApps;
  for (uint32_t i = 0; i < flows; ++i) {
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 5000));
    sinkApps.Add(sink.Install(right.Get(i)));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinks[i], 5000));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    ApplicationContainer a = bulk.Install(left.Get(i));
    a.Start(Seconds(0.0));
    a.Stop(Seconds(seconds));
  }
  sinkApps.Start(Seconds(0.0));
  Simulator::Stop(Seconds(seconds));
  auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t received = 0;
  for (uint32_t i = 0; i < sinkApps.GetN(); ++i) {
    received += DynamicCast<PacketSink>(sinkApps.Get(i))->GetTotalRx();
  }
  Simulator::Destroy();
  std::printf("{\"simulated_s\": %.3f, \"wall_s\": %.6f, \"packets\": %llu, \"bytes_received\": %llu}\n", seconds,
              wall, (unsigned long long)g_host_tx, (unsigned long long)received);
  return 0;
}

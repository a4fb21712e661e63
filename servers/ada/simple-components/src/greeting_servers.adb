package body Greeting_Servers is

   Greeting : constant String := "{""greeting"":""Hello World!""}";
   CRLF     : constant String := (ASCII.CR, ASCII.LF);

   overriding function Create
     (Factory  : access Greeting_Factory;
      Listener : access Connections_Server'Class;
      From     : Sock_Addr_Type) return Connection_Ptr
   is
      pragma Unreferenced (From);
   begin
      if Get_Clients_Count (Listener.all) < Factory.Max_Connections then
         return new Greeting_Client
           (Listener       => Listener.all'Unchecked_Access,
            Request_Length => 1024,
            Input_Size     => 1024,
            Output_Size    => 1024);
      else
         return null;   --  refused: the library closes the connection
      end if;
   end Create;

   overriding procedure Connected (Client : in out Greeting_Client) is
   begin
      if Set_No_Delay then
         Set_Socket_Option
           (Get_Socket (Client), IP_Protocol_For_TCP_Level, (GNAT.Sockets.No_Delay, True));
      end if;
      HTTP_Client (Client).Connected;
   end Connected;

   --  Accumulate_Body then Send_Body (Client): Send_Body (Client, Text)
   --  writes a CRLF after the body, which a keep-alive client reads as the
   --  start of its next answer.
   overriding procedure Do_Get (Client : in out Greeting_Client) is
      Status : Status_Line renames Get_Status_Line (Client);
   begin
      if Status.Kind = File and then Status.File = "api"
        and then Status.Query = ""
      then
         Send_Status_Line (Client, 200, "OK");
         Send_Date (Client);
         Send_Server (Client);
         --  Send_Content_Type always adds "; charset=" (empty or not).
         Send (Client, "Content-Type: application/json" & CRLF);
         Send_Connection (Client, Persistent => True);
         Accumulate_Body (Client, Greeting);
         Send_Body (Client);
      else
         Reply_Text (Client, 404, "Not Found", "Not Found");
      end if;
   end Do_Get;

   overriding function Get_Server_Address
     (Listener : Lab_Server) return Sock_Addr_Type is
   begin
      return Network_Socket_Address (Bind_Address, Listener.Port);
   end Get_Server_Address;

   --  As the library's own Create_Socket, with BACKLOG as the queue and the
   --  address's family (IPv4 or IPv6).
   overriding procedure Create_Socket
     (Listener : in out Lab_Server;
      Socket   : in out Socket_Type;
      Address  : Sock_Addr_Type)
   is
      pragma Unreferenced (Listener);
   begin
      Create_Socket (Socket, Address.Family);
      Set_Socket_Option (Socket, Socket_Level, (Reuse_Address, True));
      Bind_Socket (Socket, Address);
      Listen_Socket (Socket, Backlog);
   end Create_Socket;

end Greeting_Servers;
